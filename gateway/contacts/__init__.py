"""Contact discovery from uploaded address books (eBuddy's User Discovery)."""
