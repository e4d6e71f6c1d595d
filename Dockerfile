# The gengate container image (docs/deploy.md, "The container image").
#
# Base: the official Node.js image on Debian slim, pinned to the exact Node.js release the project
# develops and tests with (the `node` devDependency in package.json; test/deploy/image.test.ts fails when
# the two differ). Chosen over distroless because its tags name the exact Node.js release (distroless
# tags float to the latest 24.x and pin only by digest), because one image both compiles and runs the
# code, and because operators keep a shell for `kubectl exec` when debugging. The runtime stage removes
# npm, corepack and yarn, runs as a non-root user on files it cannot change, and is fine with a
# read-only root filesystem.
#
# Build: docker build -t gengate .
# Behind a registry proxy or a private registry, pass its CA and npm configuration as build secrets
# (never as files in the context): they are mounted for `npm ci` alone and end up in no layer.
#   docker build --secret id=npm_ca,src="$(npm config get cafile)" \
#     --secret id=npmrc,src="$(npm config get userconfig)" -t gengate .

FROM docker.io/library/node:24.21.0-bookworm-slim AS base

FROM base AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: gengate's dependencies are plain JavaScript and need no install script; the only one
# that has one is the `node` devDependency, which would download a second Node.js this image already has.
# It also means no package's code runs while the registry credentials are mounted.
RUN --mount=type=secret,id=npm_ca,required=false \
    --mount=type=secret,id=npmrc,required=false \
    if [ -f /run/secrets/npm_ca ]; then export NPM_CONFIG_CAFILE=/run/secrets/npm_ca; fi \
    && NPM_CONFIG_USERCONFIG=/run/secrets/npmrc npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev --ignore-scripts --no-audit --no-fund

FROM base
# VERSION is package.json's (the image test fails when they differ); SOURCE_URL and REVISION, where the
# repository lives and which commit was built, are set by the pipeline that builds the image. Declared
# before the RUN below, whose cache key includes them: a new revision rebuilds this stage's few cheap
# steps and never gets a stale label from a builder's cache (Buildah 1.28 serves one for a LABEL step
# that comes after the last RUN).
ARG VERSION=0.1.0
ARG SOURCE_URL=""
ARG REVISION=""
LABEL org.opencontainers.image.title="gengate" \
      org.opencontainers.image.description="A policy gateway for the MaxAI image and video generation API." \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.source="${SOURCE_URL}" \
      org.opencontainers.image.revision="${REVISION}"
# The runtime needs node alone: without a package manager nothing in the container can install code,
# and image scanners do not report the package managers' own dependencies.
RUN rm -rf /usr/local/lib/node_modules /usr/local/bin/npm /usr/local/bin/npx /usr/local/bin/corepack \
      /usr/local/bin/yarn /usr/local/bin/yarnpkg /opt/yarn-*
WORKDIR /app
# Owned by root and not writable by anyone else: the process cannot change its own code.
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# The `node` user of the base image, by number so that Kubernetes' runAsNonRoot can verify it; the
# image runs as well under any other uid (the files it reads are world-readable).
USER 1000:1000
# The gateway (server.port) and the admin server (/metrics, /healthz, /readyz; admin.port).
EXPOSE 8080 9090
STOPSIGNAL SIGTERM
# node itself is the process, so SIGTERM reaches gengate (which drains and exits 0), not a shell or npm.
# The V8 flags are the deployment's (docs/deploy.md, "Running the process without Kubernetes"). The
# configuration is mounted at this path.
ENTRYPOINT []
CMD ["node", "--max-semi-space-size=16", "--heap-growing-percent=50", "/app/dist/main.js", \
     "--config", "/etc/gengate/gengate.yaml"]
