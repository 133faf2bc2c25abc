"""Rate limits: token buckets keyed by what is attacked (see ``policy.py``).

The ``RateLimiter`` interface with its in-process buckets and sign-in back-off
(``limiter.py``) and the same in Redis, one Lua script a step
(``redis_limiter.py``); ``policy.py`` names the API's limits and which of them
fail closed when Redis is lost. Nothing here knows what it limits.
"""
