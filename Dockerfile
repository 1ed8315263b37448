# The image of the node agent (sidecar) and the control plane (fulfiller):
# Node 24, production dependencies only, non-root.
# TypeScript runs through Node's built-in type stripping, so there is no build
# stage: the image holds the sources as they are in the repository.
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
USER 65532:65532
ENTRYPOINT ["node", "--disable-warning=ExperimentalWarning", "--import", "./src/cli/early-exit.ts", "src/cli/main.ts"]
CMD ["sidecar"]
