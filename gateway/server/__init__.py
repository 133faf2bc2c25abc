"""The process: the aiohttp application factory, serving, workers, graceful drain,
logs, the ``/metrics`` endpoint and the offline GraphiQL page."""
