"""The blog's rows as records: a post as submitted, as listed and as stored, and a comment."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from gateway.db.clock import time_of
from gateway.db.session import Row


@dataclass(frozen=True)
class PostDraft:
    """A post as its author submits it (already validated)."""

    slug: str
    author: str
    title: str
    body: str
    tags: tuple[str, ...]


@dataclass(frozen=True)
class PostSummary:
    """What a list shows of a post; the index rows carry exactly this."""

    id: UUID
    slug: str
    author: str
    title: str
    tags: tuple[str, ...]

    @property
    def published_at(self) -> datetime:
        return time_of(self.id)


@dataclass(frozen=True)
class PostRecord(PostSummary):
    body: str

    @classmethod
    def from_row(cls, row: Row) -> PostRecord:
        return cls(
            id=row["id"],
            slug=row["slug"],
            author=row["author"],
            title=row["title"] or "",
            tags=tuple(row["tags"] or ()),
            body=row["body"] or "",
        )

    def same_content_as(self, draft: PostDraft) -> bool:
        return (self.author, self.title, self.body, self.tags) == (
            draft.author,
            draft.title,
            draft.body,
            draft.tags,
        )


@dataclass(frozen=True)
class CommentRecord:
    id: UUID
    slug: str
    name: str
    email: str
    text: str

    @property
    def posted_at(self) -> datetime:
        return time_of(self.id)

    @classmethod
    def from_row(cls, row: Row, slug: str) -> CommentRecord:
        return cls(
            id=row["id"], slug=slug, name=row["name"] or "", email=row["email"] or "", text=row["text"] or ""
        )
