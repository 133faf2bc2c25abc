"""GraphQL gateway over Apache Cassandra."""

__version__ = "0.1.0"
