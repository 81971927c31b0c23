# ackreplay: the API and the workers run from this one image (see docker-compose.yml).
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 NUMBA_CACHE_DIR=/tmp/numba-cache
WORKDIR /app
COPY pyproject.toml README.md alembic.ini ./
COPY api ./api
COPY cli ./cli
COPY core ./core
COPY estimators ./estimators
COPY ingest ./ingest
COPY workers ./workers
COPY migrations ./migrations
RUN pip install --no-cache-dir -e .
RUN useradd --create-home ackreplay && mkdir -p /data && chown ackreplay /data
USER ackreplay
EXPOSE 8000
CMD ["ackreplay", "serve", "--host", "0.0.0.0", "--port", "8000"]
