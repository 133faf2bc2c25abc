// The blog's front page: public, so it works signed out as well.
import { useQuery } from "@apollo/client/react";

import { graphql } from "../gql";
import { ErrorNote } from "./ErrorNote";

const FrontPage = graphql(`
  query FrontPage {
    posts(first: 10) {
      nodes {
        id
        slug
        title
        body
        tags
        publishedAt
        commentCount
        author {
          id
          login
          firstname
        }
      }
    }
  }
`);

export function Blog() {
  const { data, error } = useQuery(FrontPage);
  if (error) return <ErrorNote error={error} />;
  if (!data) return <p>Loading…</p>;
  return (
    <section>
      <h1>Blog</h1>
      {data.posts.nodes.map((post) => (
        <article key={post.id} className="post">
          <h2>{post.title}</h2>
          <p className="muted">
            {post.author.firstname} · {new Date(post.publishedAt).toLocaleDateString()} · {post.commentCount}{" "}
            comments {post.tags.map((tag) => `#${tag}`).join(" ")}
          </p>
          <p>{post.body.length > 280 ? `${post.body.slice(0, 280)}…` : post.body}</p>
        </article>
      ))}
    </section>
  );
}
