# syntax=docker/dockerfile:1
# Tether as a container image: docs/deploy.md, *Containers*. Checked statically by
# test/e2e/container-image.test.ts (parsed and validated, then rule by rule; hadolint where installed).
#
#   docker build -t tether-gateway .
#   docker run -p 8787:8787 -e TETHER_API_KEYS=alice:$(openssl rand -hex 32) -v tether-data:/data tether-gateway
#
# Build stage: the whole checkout, dev dependencies included (esbuild, TypeScript, Vite build dist/
# and web/dist through `npm ci`'s prepare), then pruned to what runs.
FROM node:20-bookworm-slim AS build
# better-sqlite3 compiles itself when no prebuilt binary fits. The tools follow the base image's
# Debian release (pinning each would break with its next point release).
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 make g++ \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN npm ci --no-audit --no-fund \
    && npm prune --omit=dev --no-audit --no-fund

# Run stage: the build, its runtime dependencies, tini, a user that is not root.
FROM node:20-bookworm-slim
# tini is PID 1: it passes SIGTERM to node (the graceful stop) and reaps the processes node's
# tools leave behind. Node itself is never PID 1, and never under npm or a shell.
RUN apt-get update \
    && apt-get install -y --no-install-recommends tini=0.19.0-1+b3 \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY --from=build /src/package.json /src/LICENSE ./
COPY --from=build /src/bin/tether.js ./bin/tether.js
COPY --from=build /src/dist ./dist
COPY --from=build /src/web/dist ./web/dist
COPY --from=build /src/node_modules ./node_modules
# The store and the config file live in /data (a volume), owned by the image's `node` user.
RUN mkdir -p /data && chown node:node /data
VOLUME ["/data"]
ENV NODE_ENV=production \
    TETHER_HOST=0.0.0.0 \
    TETHER_PORT=8787 \
    TETHER_DB=/data/tether.db \
    TETHER_CONFIG=/data/config.yaml
USER node
EXPOSE 8787
# Ready = the store answers and no graceful stop has begun (`/readyz`: 503 while draining).
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
    CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.TETHER_PORT || 8787) + '/readyz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# SIGTERM (docker stop) reaches node through tini: drain (TETHER_DRAIN_S), then the graceful
# stop within shutdown_flush_s. Give `docker stop` / `stop_grace_period` more than both.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "bin/tether.js", "serve"]
