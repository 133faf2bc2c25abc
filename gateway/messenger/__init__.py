"""Messenger: 1:1 conversations, talk partners with unread counts, live delivery."""
