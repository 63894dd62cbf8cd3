# Sluice container image (docs/self-hosting.md, "Docker"). Not built by CI.
#   docker build -t sluice .
#   docker run -d --name sluice -p 8080:8080 -v sluice-data:/data sluice
# Native modules (isolated-vm, lmdb) are built in the build stage against the same Node and libc
# as the runtime stage, so both use the same Debian-based image.
FROM node:20-bookworm AS build
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json ./
COPY src ./src
COPY test ./test
COPY bench ./bench
COPY bin ./bin
COPY scripts ./scripts
RUN npm run build && npm prune --omit=dev

FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production \
    SLUICE_HOST=0.0.0.0 \
    SLUICE_PORT=8080 \
    SLUICE_DATA_DIR=/data
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist/src ./dist/src
COPY --from=build /app/bin ./bin
COPY docs ./docs
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=3s CMD node -e "fetch('http://127.0.0.1:8080/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
# SIGTERM drains and exits 0; give it time (docker stop -t 60).
STOPSIGNAL SIGTERM
CMD ["node", "--max-semi-space-size=64", "--single-threaded-gc", "dist/src/main.js"]
