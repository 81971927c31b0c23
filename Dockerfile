# ackreplay: the API and the workers run from this one image (docker-compose.yml, docs/deployment.md).
# Stage 1 builds the wheel from the build context (.dockerignore keeps .venv, .git and caches out); stage 2
# installs that wheel with every dependency at the version of requirements.lock, and nothing else of the source
# tree, so the image holds exactly what `pip install -c requirements.lock` gives a user (tests/test_install.py
# replays stage 1 and installs its wheel, pinned the same way, into a fresh venv).
FROM python:3.11-slim AS build
WORKDIR /src
COPY . .
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /dist .
RUN cp requirements.lock /dist/

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 NUMBA_CACHE_DIR=/var/cache/ackreplay/numba
COPY --from=build /dist /dist
# The kernels are compiled once here (ackreplay warmup), so no container's first run compiles them.
# requirements.lock: the exact versions the test suite ran with (the wheel's metadata keeps ranges)
RUN pip install --no-cache-dir -c /dist/requirements.lock "$(ls /dist/ackreplay-*.whl)[s3]" && rm -rf /dist \
 && useradd --create-home ackreplay && mkdir -p /data "$NUMBA_CACHE_DIR" \
 && ackreplay warmup && chown -R ackreplay /data /var/cache/ackreplay
USER ackreplay
WORKDIR /home/ackreplay
EXPOSE 8000
CMD ["ackreplay", "serve", "--host", "0.0.0.0", "--port", "8000"]
