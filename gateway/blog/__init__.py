"""The blog: posts filed under tags, "all posts" and their author; comments oldest first."""
