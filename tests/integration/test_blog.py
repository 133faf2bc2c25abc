"""Blog: publish, read, comment, validation and statement counts, through the real client."""

from __future__ import annotations

from typing import Any
from uuid import uuid1, uuid4

import pytest

from gateway.db.timeline import Position
from gateway.graph.pagination import position_cursor
from tests.support.blog import (
    ADD_COMMENT,
    COMMENTS,
    POST,
    POSTS,
    PUBLISH,
    comment,
    comment_input,
    post_input,
    publish,
    unique_slug,
    unique_tag,
)
from tests.support.client import Api
from tests.support.ids import uuid_of


async def test_publish_read_comment_round_trip(api: Api) -> None:
    author = await api.sign_up("blogger", firstname="Ada")
    slug = unique_slug("round-trip")
    tag = unique_tag()
    published = await publish(
        api, author.token, slug, title="  Hello  ", body="  *Body*\n", tags=[tag.upper(), "Python", tag]
    )
    assert published["slug"] == slug
    assert published["title"] == "Hello"  # trimmed
    assert published["body"] == "  *Body*\n"  # kept as written
    assert published["tags"] == [tag, "python"]  # lower-case, duplicates dropped, order kept
    assert published["author"] == {"login": author.login}
    assert published["commentCount"] == 0
    assert published["publishedAt"].endswith("Z")

    post = (await api.ok(POST, {"slug": slug}))["post"]
    assert post == {
        "slug": slug,
        "title": "Hello",
        "body": "  *Body*\n",
        "tags": [tag, "python"],
        "publishedAt": published["publishedAt"],
        "commentCount": 0,
        "author": {"login": author.login, "firstname": "Ada"},
    }

    # Commenters do not sign in; comments come back oldest first.
    texts = ["first!", "second", "third"]
    added = [await comment(api, slug, name=f"Reader {i}", text=f"  {t}  ") for i, t in enumerate(texts)]
    assert [c["text"] for c in added] == texts  # trimmed
    assert all(uuid_of(c["id"]).version == 1 for c in added)  # time-based ids under global ones
    data = (await api.ok(COMMENTS, {"slug": slug}))["post"]
    assert data["commentCount"] == 3
    nodes = [edge["node"] for edge in data["comments"]["edges"]]
    assert [n["text"] for n in nodes] == texts
    assert [n["commenterName"] for n in nodes] == ["Reader 0", "Reader 1", "Reader 2"]
    assert [n["id"] for n in nodes] == [c["id"] for c in added]
    assert [n["postedAt"] for n in nodes] == sorted(n["postedAt"] for n in nodes)

    # Filed under its tags, all posts and its author.
    for timeline in (tag, "python", None):
        page = (await api.ok(POSTS, {"tag": timeline, "first": 1}))["posts"]
        assert [e["node"]["slug"] for e in page["edges"]] == [slug]
    mine = await api.ok(
        "query($l: String!) { user(login: $l) { postCount posts { nodes { slug title tags } } } }",
        {"l": author.login},
    )
    assert mine["user"] == {
        "postCount": 1,
        "posts": {"nodes": [{"slug": slug, "title": "Hello", "tags": [tag, "python"]}]},
    }


async def test_tag_argument_is_case_insensitive(api: Api) -> None:
    author = await api.sign_up("casetag")
    tag = unique_tag()
    post = await publish(api, author.token, tags=[tag])
    page = (await api.ok(POSTS, {"tag": tag.upper()}))["posts"]
    assert [e["node"]["slug"] for e in page["edges"]] == [post["slug"]]


async def test_missing_slug_is_null(api: Api) -> None:
    assert (await api.ok(POST, {"slug": unique_slug("nobody-wrote")}))["post"] is None
    assert (await api.ok(POST, {"slug": "Not A Slug!"}))["post"] is None


async def test_unknown_tag_is_an_empty_page(api: Api) -> None:
    page = (await api.ok(POSTS, {"tag": unique_tag()}))["posts"]
    assert page == {"edges": [], "pageInfo": {"hasNextPage": False, "endCursor": None}}


async def test_comment_on_a_missing_post_is_not_found_and_stores_nothing(api: Api) -> None:
    slug = unique_slug("ghost")
    error = await api.error(ADD_COMMENT, {"slug": slug, "input": comment_input()})
    assert error["extensions"]["code"] == "NOT_FOUND"
    # Publishing that slug later shows no stray comment or count.
    author = await api.sign_up("ghost")
    await publish(api, author.token, slug)
    data = (await api.ok(COMMENTS, {"slug": slug}))["post"]
    assert data["commentCount"] == 0
    assert data["comments"]["edges"] == []


async def test_publishing_needs_sign_in(api: Api) -> None:
    slug = unique_slug("anon")
    error = await api.error(PUBLISH, post_input(slug))
    assert error["extensions"]["code"] == "UNAUTHENTICATED"
    assert (await api.ok(POST, {"slug": slug}))["post"] is None


async def test_commenter_email_is_stored_but_never_returned(api: Api, app: Any) -> None:
    from gateway.server.app import SERVICES

    author = await api.sign_up("privacy")
    post = await publish(api, author.token)
    secret = "very-secret-commenter@example.com"
    added = await comment(api, post["slug"], email=secret)

    # Not a field of Comment at all...
    fields = await api.ok('{ __type(name: "Comment") { fields { name } } }')
    assert {f["name"] for f in fields["__type"]["fields"]} == {"id", "commenterName", "text", "postedAt"}
    # ...but stored for the blog's owner.
    db = app[SERVICES].db
    buckets = await db.execute("SELECT bucket FROM comment_buckets WHERE slug = ?", (post["slug"],))
    bucket = buckets.rows[0]["bucket"]
    stored = await db.execute(
        "SELECT email FROM comments WHERE slug = ? AND bucket = ? AND id = ?",
        (post["slug"], bucket, uuid_of(added["id"])),
    )
    assert stored.rows == [{"email": secret}]


# -- validation -------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"slug": ""}, "slug"),
        ({"slug": "Upper-Case"}, "slug"),
        ({"slug": "double--hyphen"}, "slug"),
        ({"slug": "-leading"}, "slug"),
        ({"slug": "trailing-"}, "slug"),
        ({"slug": "white space"}, "slug"),
        ({"slug": "under_score"}, "slug"),
        ({"slug": "a" * 101}, "slug"),
        ({"title": ""}, "title"),
        ({"title": "   "}, "title"),
        ({"title": "x" * 201}, "title"),
        ({"body": "x" * 100_001}, "body"),
        ({"tags": [f"tag{i}" for i in range(11)]}, "tags"),
        ({"tags": [""]}, "tags"),
        ({"tags": ["two words"]}, "tags"),
        ({"tags": ["under_score"]}, "tags"),
        ({"tags": ["x" * 31]}, "tags"),
        ({"tags": ["ok", "née"]}, "tags"),
    ],
)
async def test_publish_validation_names_the_field(api: Api, overrides: dict[str, Any], field: str) -> None:
    author = await api.sign_up("val")
    variables = post_input(unique_slug("val"), **overrides)
    error = await api.error(PUBLISH, variables, token=author.token)
    assert error["extensions"] == {"code": "BAD_USER_INPUT", "field": field}
    if field != "slug":  # nothing was claimed
        assert (await api.ok(POST, {"slug": variables["input"]["slug"]}))["post"] is None
    count = await api.ok("query($l: String!) { user(login: $l) { postCount } }", {"l": author.login})
    assert count["user"]["postCount"] == 0


async def test_publish_accepts_every_limit_exactly(api: Api) -> None:
    author = await api.sign_up("limits")
    slug = "a" * 90 + "-" + "b" * 9  # 100 characters
    tags = [f"{i}" + "x" * 29 for i in range(10)]  # 10 tags of 30 characters
    post = await publish(api, author.token, slug, title="t" * 200, body="b" * 100_000, tags=tags)
    assert post["slug"] == slug
    assert post["tags"] == tags
    assert len(post["title"]) == 200
    assert len(post["body"]) == 100_000
    empty_body = await publish(api, author.token, body="")
    assert empty_body["body"] == ""
    added = await comment(api, slug, name="n" * 100, text="c" * 4000)
    assert len(added["text"]) == 4000
    assert added["commenterName"] == "n" * 100


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"name": ""}, "name"),
        ({"name": "  "}, "name"),
        ({"name": "x" * 101}, "name"),
        ({"email": "not-an-email"}, "email"),
        ({"email": "a@b"}, "email"),
        ({"email": ""}, "email"),
        ({"text": ""}, "text"),
        ({"text": " \n\t "}, "text"),
        ({"text": "x" * 4001}, "text"),
    ],
)
async def test_comment_validation_names_the_field(api: Api, overrides: dict[str, Any], field: str) -> None:
    author = await api.sign_up("cval")
    post = await publish(api, author.token)
    error = await api.error(ADD_COMMENT, {"slug": post["slug"], "input": comment_input(**overrides)})
    assert error["extensions"] == {"code": "BAD_USER_INPUT", "field": field}
    data = (await api.ok(COMMENTS, {"slug": post["slug"]}))["post"]
    assert data["commentCount"] == 0
    assert data["comments"]["edges"] == []


async def test_comment_on_a_malformed_slug_names_the_slug(api: Api) -> None:
    error = await api.error(ADD_COMMENT, {"slug": "Not A Slug", "input": comment_input()})
    assert error["extensions"] == {"code": "BAD_USER_INPUT", "field": "slug"}


@pytest.mark.parametrize(
    ("variables", "code", "field"),
    [
        ({"tag": "two words"}, "BAD_USER_INPUT", "tag"),
        ({"tag": "x" * 31}, "BAD_USER_INPUT", "tag"),
        ({"first": -1}, "BAD_USER_INPUT", "first"),
        ({"first": 101}, "QUERY_TOO_COMPLEX", "first"),
        ({"after": "not a cursor"}, "BAD_USER_INPUT", "after"),
        # Well-formed, but its id is a random (version 4) UUID, not a timeuuid.
        ({"after": position_cursor(Position(202601, uuid4()))}, "BAD_USER_INPUT", "after"),
        # A bucket beyond Cassandra's int.
        ({"after": position_cursor(Position(10**11, uuid1()))}, "BAD_USER_INPUT", "after"),
    ],
)
async def test_posts_arguments_are_validated(
    api: Api, variables: dict[str, Any], code: str, field: str
) -> None:
    error = await api.error(POSTS, variables)
    assert error["extensions"]["code"] == code
    assert error["extensions"]["field"] == field


async def test_comment_and_author_list_cursors_are_validated(api: Api) -> None:
    author = await api.sign_up("curs")
    post = await publish(api, author.token)
    error = await api.error(COMMENTS, {"slug": post["slug"], "after": "%%%"})
    assert error["extensions"] == {"code": "BAD_USER_INPUT", "field": "after"}
    error = await api.error(
        'query($l: String!) { user(login: $l) { posts(after: "eyJ4IjoxfQ") { nodes { slug } } } }',
        {"l": author.login},
    )
    assert error["extensions"] == {"code": "BAD_USER_INPUT", "field": "after"}


# -- statement counts ---------------------------------------------------------

FRONT_PAGE = """query($tag: String, $first: Int) {
  posts(tag: $tag, first: $first) {
    nodes { slug title tags publishedAt body commentCount author { login firstname postCount } }
  }
}"""


async def test_a_page_of_10_posts_costs_the_statements_of_a_page_of_2(api: Api) -> None:
    tag = unique_tag()
    authors = [await api.sign_up(f"np{i}") for i in range(10)]
    slugs = []
    for i, account in enumerate(authors):
        post = await publish(api, account.token, tags=[tag])
        slugs.append(post["slug"])
        for _ in range(i % 3):
            await comment(api, post["slug"])

    two = await api.call(FRONT_PAGE, {"tag": tag, "first": 2})
    ten = await api.call(FRONT_PAGE, {"tag": tag, "first": 10})
    assert not two.errors and not ten.errors
    assert two.data is not None and ten.data is not None
    nodes = ten.data["posts"]["nodes"]
    assert [n["slug"] for n in nodes] == slugs[::-1]
    assert len({n["author"]["login"] for n in nodes}) == 10
    assert [n["commentCount"] for n in nodes] == [i % 3 for i in range(10)][::-1]
    assert all(n["author"]["postCount"] == 1 for n in nodes)
    # bucket index + bucket slice + authors IN + post counts IN + comment counts IN + bodies IN
    assert two.statements == ten.statements == 6

    # The exact shape: author and commentCount, from the index rows.
    shape = """query($f: Int, $t: String) {
      posts(tag: $t, first: $f) { nodes { author { login } commentCount } }
    }"""
    small = await api.call(shape, {"t": tag, "f": 2})
    large = await api.call(shape, {"t": tag, "f": 10})
    assert small.statements == large.statements == 4


async def test_a_post_page_with_50_comments_costs_the_statements_of_one_with_5(api: Api) -> None:
    author = await api.sign_up("thread")
    post = await publish(api, author.token)
    for i in range(50):
        await comment(api, post["slug"], text=f"comment {i}")
    query = """query($slug: String!, $first: Int) {
      post(slug: $slug) { title commentCount author { login }
        comments(first: $first) { nodes { id commenterName text postedAt } } }
    }"""
    five = await api.call(query, {"slug": post["slug"], "first": 5})
    fifty = await api.call(query, {"slug": post["slug"], "first": 50})
    assert fifty.data is not None
    assert [n["text"] for n in fifty.data["post"]["comments"]["nodes"]] == [f"comment {i}" for i in range(50)]
    # post + author + comment count + bucket index + bucket slice
    assert five.statements == fifty.statements == 5


async def test_author_lists_cost_the_same_for_any_number_of_authors(api: Api) -> None:
    accounts = [await api.sign_up(f"al{i}") for i in range(6)]
    for account in accounts:
        await publish(api, account.token)
    query = """query($a: String!, $b: String!, $c: String!, $d: String!, $e: String!, $f: String!) {
      a: user(login: $a) { postCount } b: user(login: $b) { postCount } c: user(login: $c) { postCount }
      d: user(login: $d) { postCount } e: user(login: $e) { postCount } f: user(login: $f) { postCount }
    }"""
    logins = dict(zip("abcdef", (a.login for a in accounts), strict=True))
    response = await api.call(query, logins)
    assert response.data == {key: {"postCount": 1} for key in "abcdef"}
    assert response.statements == 2  # users IN + post counts IN
