# The image of the node agent (sidecar) and the control plane (fulfiller):
# Node 24, production dependencies only, non-root.
# TypeScript runs through Node's built-in type stripping: the image holds the
# sources as they are in the repository. The one thing built is the node
# agent's bundled file (docs/decisions/0027), in a stage of its own with the
# development dependencies (esbuild) the image leaves out.
FROM node:24-bookworm-slim AS bundle
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY scripts/bundle-sidecar.ts scripts/bundle-cni.ts ./scripts/
COPY src ./src
# dist/cni.js: the CNI IPAM plugin, which the DaemonSet's init container
# installs on the host beside this image's node (docs/decisions/0032).
RUN node scripts/bundle-sidecar.ts && node scripts/bundle-cni.ts

FROM node:24-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
# The image has its own Node 24: no node-linux-<cpu> (optional) in it (docs/decisions/0015).
RUN npm ci --omit=dev --omit=optional --no-audit --no-fund && npm cache clean --force
COPY bin ./bin
# The product only: the harness (local API server, embedded cluster, ARM
# emulator, simulated kubelet) stays out; bin/pool-monitor then runs
# src/cli/main.ts, whose commands are sidecar, fulfiller and simulate.
COPY src ./src
# bin/pool-monitor runs the sidecar from dist/sidecar.js while it is newer
# than every source: touched after the sources are in.
COPY --from=bundle /app/dist ./dist
RUN touch dist/sidecar.js
# Type-stripped sources and V8 code from a cache made at build time: without
# it every start strips the TypeScript again, and the stripper (a WebAssembly
# module) stays resident, about 20 MiB (docs/decisions/0026); the bundled
# sidecar's V8 code is cached too. The sidecar's start-up until its missing
# kubeconfig fails loads what it runs with.
ENV NODE_COMPILE_CACHE=/app/.compile-cache
RUN bin/pool-monitor sidecar --node-name warm-up --kubeconfig /nonexistent --state-dir /tmp/warm-up; \
    bin/pool-monitor fulfiller --help > /dev/null; rm -rf /tmp/warm-up; test -d /app/.compile-cache
USER 65532:65532
# bin/pool-monitor adds the sidecar's V8 options (docs/decisions/0026) and
# malloc settings (0027).
ENTRYPOINT ["bin/pool-monitor"]
CMD ["sidecar"]
