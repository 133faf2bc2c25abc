"""Rate limits: token buckets keyed by what is attacked (see ``policy.py``)."""
