"""The canonical screens of the four client apps, as one document each: the blog's front page
and a post, the mailbox and an email, the messenger's main view and a conversation, a room's
history. The benchmarks load the same screens (``bench/bench_*.py``); the limits tests hold
each within the default cost."""

from __future__ import annotations

FRONT_PAGE = """{ posts(first: 10) { edges { cursor node {
  slug title tags publishedAt commentCount author { login firstname lastname } } } } }"""
POST_PAGE = """query($slug: String!) { post(slug: $slug) {
  slug title body tags publishedAt commentCount author { login firstname lastname }
  comments(first: 50) { edges { cursor node { id commenterName text postedAt } } } } }"""
MAILBOX = """{ me {
  folders { label color unreadCount }
  folder(label: "inbox") { emails(first: 20) {
    edges { cursor node { id subject sentAt read hasAttachments from { login firstname lastname } } }
    pageInfo { hasNextPage endCursor }
  } }
} }"""
EMAIL = """query($id: ID!) { me { email(id: $id) {
  id subject body sentAt read folder from { login firstname } to { login firstname }
  attachments { filename contentType size url }
} } }"""
MAIN_VIEW = """query($after: String) { me { talkPartners(first: 50, after: $after) {
  edges { cursor node { partner { login firstname } lastMessage lastMessageAt unreadCount unreadSince } }
  pageInfo { hasNextPage endCursor }
} } }"""
CONVERSATION = """query($with: String!) { me { conversation(with: $with) {
  unreadCount messages(first: 50) { edges { cursor node { id content sentAt sender { login } } } }
} } }"""
HISTORY = """query($n: String!, $first: Int) {
  room(name: $n) {
    messages(first: $first) { edges { cursor node { id content postedAt author { login firstname } } } }
  }
}"""
