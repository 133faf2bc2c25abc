# The gateway, pointed at a Cassandra cluster by CASSANDRA_CONTACT_POINTS.
# It needs GATEWAY_CONTACTS_IDENTITY_PEPPER and GATEWAY_URL_SIGNING_SECRET (secrets of 32
# characters or more, passed at run time, never baked in) and GATEWAY_VERIFICATION_WEBHOOK_URL:
#   docker run -e CASSANDRA_CONTACT_POINTS=... -e GATEWAY_CONTACTS_IDENTITY_PEPPER=... \
#     -e GATEWAY_URL_SIGNING_SECRET=... -e GATEWAY_VERIFICATION_WEBHOOK_URL=... <image>
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    GATEWAY_HOST=0.0.0.0 GATEWAY_PORT=8000 \
    GATEWAY_CQL_DIR=/app/cql

WORKDIR /app
COPY pyproject.toml README.md ./
COPY gateway ./gateway
COPY cql ./cql
RUN pip install --no-cache-dir . && useradd --system --uid 10001 gateway
USER gateway

EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s \
  CMD python -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/readyz').status == 200 else 1)"
CMD ["gateway", "serve"]
