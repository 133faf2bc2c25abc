"""Demo blog for the playground: posts by the demo users, with tags and comments."""

from __future__ import annotations

from gateway.blog.comment_store import CommentStore
from gateway.blog.records import PostDraft
from gateway.blog.store import PostStore
from gateway.db.session import Database
from gateway.settings import Settings

#: (slug, author, title, body, tags, comments as (name, email, text))
DEMO_POSTS: list[tuple[str, str, str, str, tuple[str, ...], list[tuple[str, str, str]]]] = [
    (
        "wtf-is-a-super-column",
        "alice",
        "WTF is a super column?",
        "A column family is a map of maps. A super column family is a map of maps of maps. "
        "In CQL, both are tables with clustering columns.",
        ("cassandra", "data-modelling"),
        [
            ("Mad Hatter", "hatter@example.com", "Why is a raven like a writing desk?"),
            ("White Rabbit", "rabbit@example.com", "I'm late, but this helped."),
        ],
    ),
    (
        "timeuuids-for-ordering",
        "bob",
        "Timeuuids for ordering",
        "Two messages in the same millisecond must not collide: a timeuuid sorts by time and stays unique.",
        ("cassandra", "ids"),
        [("Wendy", "wendy@example.com", "Can we use them for comments too? Yes we can.")],
    ),
    (
        "bucketing-growing-partitions",
        "carol",
        "Bucketing partitions that grow",
        "A partition that grows with time gets a time bucket in its key, and a small index of "
        "buckets lets readers page across them.",
        ("cassandra", "data-modelling", "performance"),
        [],
    ),
    (
        "graphql-dataloaders",
        "dave",
        "DataLoaders keep lists cheap",
        "Ten posts with their authors should cost one author read, not ten.",
        ("graphql", "performance"),
        [
            ("HAL", "hal@example.com", "I'm sorry Dave, I'm afraid I batch that."),
            ("Frank", "frank@example.com", "Agreed."),
            ("Erin", "erin@example.com", "Read the fine print on IN queries."),
        ],
    ),
    (
        "reading-the-fine-print",
        "erin",
        "Reading the fine print",
        "Logged batches are atomic, not isolated.",
        ("cassandra",),
        [],
    ),
]


async def seed_blog(db: Database, settings: Settings) -> list[str]:
    """Publish the demo posts that are not there yet; returns the slugs published now.

    Publishing the same draft again is a no-op retry, so this is idempotent;
    comments are added only with the post that this run created.
    """
    posts = PostStore(db, settings)
    comments = CommentStore(db, settings)
    created = []
    for slug, author, title, body, tags, thread in DEMO_POSTS:
        published = await posts.publish(PostDraft(slug, author, title, body, tags))
        if published is None or not published.created:
            continue
        created.append(slug)
        for name, email, text in thread:
            await comments.add(slug, name=name, email=email, text=text)
    return created
