# MVP Studio: the web app (and every `mvp` command) on a CUDA machine.
#   docker build -t mvp-studio .
#   docker run --gpus all -p 7860:7860 -v mvp-data:/data mvp-studio
# The data directory (SQLite database, frame store, clips, runs) lives on the /data volume;
# set MVP_DATABASE_URL=postgresql+psycopg://... to keep the database elsewhere.
# Serve it behind HTTPS (a reverse proxy terminating TLS): the session cookie is Secure
# (MVP_SECURE_COOKIES=1 below, same as `mvp serve --secure-cookies`), and
#   -e FORWARDED_ALLOW_IPS=<the proxy's address>
# lets uvicorn take the client address (login throttling per address) and the scheme from the
# proxy's X-Forwarded-For / X-Forwarded-Proto. For a plain-HTTP trial on one machine:
#   docker run ... -e MVP_SECURE_COOKIES=0 mvp-studio
# Backups while it runs: docker exec <container> mvp db backup /data/backup-$(date +%F).sqlite
# (PostgreSQL: pg_dump; see docs/store.md, "Backups").
FROM nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04

ENV DEBIAN_FRONTEND=noninteractive \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    UV_NO_CACHE=1 \
    MVP_DATA_DIR=/data \
    MVP_SECURE_COOKIES=1 \
    GRADIO_ANALYTICS_ENABLED=False

# Python 3.11 (the version the project pins its wheels for) from the deadsnakes PPA.
RUN apt-get update \
 && apt-get install -y --no-install-recommends software-properties-common ca-certificates \
 && add-apt-repository -y ppa:deadsnakes/ppa \
 && apt-get update \
 && apt-get install -y --no-install-recommends python3.11 python3.11-venv libgl1 libglib2.0-0 \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
ENV PATH=/opt/venv/bin:$PATH
# The same setup as the README's commands (scripts/setup_env.sh runtime, the same pins), run first with the
# dependency files alone so a code change does not reinstall torch; then again with the code (the
# editable install of the project itself).
COPY requirements.txt requirements-dev.txt pyproject.toml setup.py README.md ./
COPY scripts/setup_env.sh scripts/pip_settings_for_uv.py ./scripts/
RUN mkdir -p app db mvp_core static configs assets && VENV=/opt/venv PYTHON=python3.11 scripts/setup_env.sh runtime \
 && rm -f /opt/venv/.installed-*
COPY app ./app
COPY db ./db
COPY mvp_core ./mvp_core
COPY static ./static
COPY scripts ./scripts
# the Train page's default configs (app/web/jobs.py) and the shipped SFT warm start (assets/clock-sft)
COPY configs ./configs
COPY assets ./assets
RUN VENV=/opt/venv PYTHON=python3.11 scripts/setup_env.sh runtime

# Run as an unprivileged user; only /data is writable.
RUN useradd --create-home --uid 1000 mvp && mkdir -p /data && chown mvp:mvp /data
USER mvp
VOLUME ["/data"]
EXPOSE 7860

HEALTHCHECK --interval=30s --timeout=5s --start-period=60s \
  CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:7860/login', timeout=4)" || exit 1

# 0.0.0.0 inside the container; publish the port with -p to choose who can reach it.
CMD ["mvp", "serve", "--data", "/data", "--host", "0.0.0.0", "--port", "7860"]
