"""Shared helpers of the blog tests (no tests here): GraphQL documents and a few calls."""

from __future__ import annotations

import uuid
from typing import Any

from tests.support.client import Api

PUBLISH = """mutation($input: PostInput!) {
  publishPost(input: $input) { slug title body tags publishedAt author { login } commentCount }
}"""
ADD_COMMENT = """mutation($slug: String!, $input: CommentInput!) {
  addComment(slug: $slug, input: $input) { id commenterName text postedAt }
}"""
POST = """query($slug: String!) {
  post(slug: $slug) {
    slug title body tags publishedAt commentCount author { login firstname }
  }
}"""
POSTS = """query($tag: String, $first: Int, $after: String) {
  posts(tag: $tag, first: $first, after: $after) {
    edges { cursor node { slug } }
    pageInfo { hasNextPage endCursor }
  }
}"""
COMMENTS = """query($slug: String!, $first: Int, $after: String) {
  post(slug: $slug) {
    commentCount
    comments(first: $first, after: $after) {
      edges { cursor node { id commenterName text postedAt } }
      pageInfo { hasNextPage endCursor }
    }
  }
}"""


def unique_slug(prefix: str = "post") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def unique_tag() -> str:
    return f"t-{uuid.uuid4().hex[:12]}"


def post_input(slug: str, /, **overrides: Any) -> dict[str, Any]:
    return {
        "input": {
            "slug": slug,
            "title": f"Title of {slug}",
            "body": f"Body of {slug}",
            "tags": [],
            **overrides,
        }
    }


def comment_input(**overrides: Any) -> dict[str, Any]:
    return {"name": "Commenter", "email": "commenter@example.com", "text": "Nice post.", **overrides}


async def publish(api: Api, token: str, slug: str | None = None, /, **overrides: Any) -> dict[str, Any]:
    data = await api.ok(PUBLISH, post_input(slug or unique_slug(), **overrides), token=token)
    return data["publishPost"]


async def comment(api: Api, slug: str, **overrides: Any) -> dict[str, Any]:
    data = await api.ok(ADD_COMMENT, {"slug": slug, "input": comment_input(**overrides)})
    return data["addComment"]


async def all_pages(api: Api, query: str, variables: dict[str, Any], path: list[str]) -> list[str]:
    """Follow a connection to its end, returning the node ids/slugs page by page."""
    seen: list[str] = []
    after = None
    while True:
        data = await api.ok(query, {**variables, "after": after})
        connection: Any = data
        for key in path:
            connection = connection[key]
        for edge in connection["edges"]:
            node = edge["node"]
            seen.append(node.get("slug") or node.get("id"))
        if not connection["pageInfo"]["hasNextPage"]:
            return seen
        after = connection["pageInfo"]["endCursor"]
        assert after is not None
