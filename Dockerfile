# The image of the node agent (sidecar) and the control plane (fulfiller):
# Node 24, what the product loads and nothing else, non-root.
# TypeScript runs through Node's built-in type stripping: the image holds the
# sources as they are in the repository. What is built: the node agent's
# bundled file (docs/decisions/0027), in a stage with the development
# dependencies (esbuild) the image leaves out, and the CNI IPAM plugin, a
# static Go binary (cni-plugin/, the standard library only), in a Go stage:
# the DaemonSet's init container copies that one file to the node
# (docs/decisions/0032). `make image` builds this with buildah, from these
# official bases or from stand-ins made of Debian's packages and the
# project's Node 24 (and Debian's golang-go) where no registry is reachable
# (docs/decisions/0033).
ARG NODE_IMAGE=docker.io/library/node:24-bookworm-slim
ARG RUNTIME_IMAGE=docker.io/library/debian:bookworm-slim
ARG GO_IMAGE=docker.io/library/golang:1.22-bookworm

# The CNI plugin: static (no cgo, so no loader and no libc on the host),
# without symbol tables or build paths, as `make cni` builds it. No module
# to download: the standard library only (go.mod has no require).
FROM ${GO_IMAGE} AS cni
WORKDIR /src
COPY cni-plugin/go.mod cni-plugin/*.go ./
COPY cni-plugin/internal/ ./internal/
RUN CGO_ENABLED=0 GOPROXY=off go build -trimpath -buildvcs=false \
      -ldflags='-s -w' -o /out/pool-monitor-cni . && \
    echo '{"cniVersion":"1.1.0"}' | CNI_COMMAND=VERSION /out/pool-monitor-cni | grep -q supportedVersions

# Every dependency, once: the bundles are made with esbuild, and the
# production tree is what is left after pruning the rest.
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund

FROM deps AS bundle
COPY scripts/bundle-sidecar.ts ./scripts/
COPY src ./src
RUN node scripts/bundle-sidecar.ts

# Production dependencies only, without what the product never loads (source
# maps, type declarations, browser builds, docs: scripts/image-prune). The
# image has its own Node 24: no node-linux-<cpu> (optional) in it
# (docs/decisions/0015).
FROM deps AS modules
COPY scripts/image-prune ./scripts/
RUN npm prune --omit=dev --omit=optional --no-audit --no-fund && scripts/image-prune node_modules

# /app as the image holds it, made here so that the runtime stage takes it in
# one layer.
FROM ${NODE_IMAGE} AS app
WORKDIR /app
COPY package.json package-lock.json ./
COPY --from=modules /app/node_modules ./node_modules
COPY bin ./bin
# The product only: the harness (local API server, embedded cluster, ARM
# emulator, simulated kubelet) stays out; bin/pool-monitor then runs
# src/cli/main.ts, whose commands are sidecar, fulfiller and simulate.
COPY src ./src
COPY --from=bundle /app/dist ./dist
COPY --from=cni /out/pool-monitor-cni ./dist/pool-monitor-cni
# Type-stripped sources and V8 code from a cache made at build time: without
# it every start strips the TypeScript again, and the stripper (a WebAssembly
# module) stays resident, about 20 MiB (docs/decisions/0026); the bundled
# sidecar's V8 code is cached too. The sidecar's start-up until its missing
# kubeconfig stops it loads what it runs with; the fulfiller's with the azure
# backend loads its modules and the Azure SDK's. Either stopping elsewhere (a
# module pruned that it loads) fails the build. bin/pool-monitor runs the
# sidecar from dist/sidecar.js while it is newer than every source: touched
# after the sources are in.
ENV NODE_ENV=production NODE_COMPILE_CACHE=/app/.compile-cache
RUN touch dist/sidecar.js && \
    for cmd in "sidecar --node-name warm-up --state-dir /tmp/warm-up" \
      "fulfiller --backend azure --listen 127.0.0.1:0 --azure-resource-group warm-up \
        --azure-subscription-id 00000000-0000-0000-0000-000000000000"; do \
      out=$(bin/pool-monitor $cmd --kubeconfig /nonexistent 2>&1); \
      case $out in *"--kubeconfig /nonexistent: file not found"*) ;; \
        *) echo "warm-up: bin/pool-monitor $cmd: $out" >&2; exit 1 ;; esac; \
    done; \
    rm -rf /tmp/warm-up && test -d /app/.compile-cache

# What runs: the runtime base, Node's binary and /app. No npm, no
# development dependency.
FROM ${RUNTIME_IMAGE}
COPY --from=app /usr/local/bin/node /usr/local/bin/node
COPY --from=app /app /app
ENV NODE_ENV=production NODE_COMPILE_CACHE=/app/.compile-cache
WORKDIR /app
USER 65532:65532
# bin/pool-monitor adds the sidecar's V8 options (docs/decisions/0026) and
# malloc settings (0027).
ENTRYPOINT ["bin/pool-monitor"]
CMD ["sidecar"]
