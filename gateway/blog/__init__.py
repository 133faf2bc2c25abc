"""The blog: posts filed under tags, "all posts" and their author; comments oldest first.

Owns ``posts``, the tag and author timelines with their bucket indexes
(``posts_by_tag``, ``posts_by_author_bucket`` ...; ``posts_by_author`` is still
written for older gateways), ``comments`` with its bucket index, and the
``post_counts`` and ``comment_counts`` counters; ``Query.post``,
``Query.posts``, ``User.posts``, ``User.postCount``, ``publishPost`` and
``addComment``.

The domain template's modules, with the store split by what it holds:
``store.py`` (posts and their timelines) and ``comment_store.py``. No service
module: each mutation writes through one store. ``recount.py`` is
``gateway blog-recount``, ``backfill.py`` is ``gateway backfill blog``.
Tables, invariants and repairs: ``docs/data-model/blog.md``.
"""
