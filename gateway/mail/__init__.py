"""Mail: folders with unread counters, emails, and attachments stored in 1000 KiB chunks."""
