"""The broker: what one gateway process tells the others.

The pub/sub interface domains are handed (:mod:`gateway.broker.pubsub`), its
in-process and Redis implementations, the codec of the events that cross
processes, and the announcement of revoked sessions. Cassandra stays the system
of record: the broker only fans out, so a lost message never loses data.
"""
