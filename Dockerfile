# campusgate as a container image (docs/deployment.md, "The image"): built in stages from the
# official Node.js 22 image; the image that runs holds the build and the production dependencies
# only, runs as the user `node`, and writes nothing outside the volume /data.
#
#   docker build -t campusgate .
#   docker run -p 3000:3000 -v campusgate-data:/data campusgate

FROM node:22-bookworm-slim AS build
# better-sqlite3 is compiled where no prebuilt binary of it can be downloaded; node-gyp then takes
# the headers from the Node.js install instead of downloading them.
ENV npm_config_nodedir=/usr/local npm_config_update_notifier=false
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
# The dependencies first, so that a change of the source alone reuses this layer. The workspaces
# (the kits and the example app under packages/ and examples/) are no part of the service.
COPY package.json package-lock.json ./
RUN npm ci --workspaces=false --ignore-scripts --no-audit --no-fund --cache /tmp/npm-cache \
 && npm rebuild better-sqlite3 --workspaces=false --cache /tmp/npm-cache \
 && rm -rf /tmp/npm-cache
COPY . .
# The build; then the development dependencies go, and what compiling the native module left
# beside its binary. The service writes to ./data by default: here that is the volume /data.
# bin/campusgate is the command line (`campusgate …` inside the container).
# REVISION (the commit, `--build-arg REVISION=$(git rev-parse HEAD)`) goes into
# dist/build-info.json, which campusgate_build_info reports (docs/deployment.md, "The image").
ARG REVISION=unknown
RUN npx tsc -p tsconfig.build.json \
 && printf '{"revision":"%s"}\n' "$REVISION" > dist/build-info.json \
 && npm prune --omit=dev --workspaces=false --no-audit --no-fund --cache /tmp/npm-cache \
 && rm -rf /tmp/npm-cache src tsconfig.json tsconfig.build.json \
 && cd node_modules/better-sqlite3 \
 && rm -rf deps src build/deps build/Release/obj build/Release/obj.target build/Release/.deps \
      build/Release/sqlite3.a build/Release/test_extension.node \
 && cd /app && ln -s /data data && mkdir /data && ln -s campusgate.js bin/campusgate

FROM node:22-bookworm-slim
# OCI labels: where the image comes from and which release it is (docker build --build-arg
# SOURCE=… VERSION=… REVISION=… CREATED=…; docs/deployment.md, "The image").
ARG SOURCE=unknown VERSION=unknown REVISION=unknown CREATED=unknown
LABEL org.opencontainers.image.title="campusgate" \
      org.opencontainers.image.source="$SOURCE" \
      org.opencontainers.image.version="$VERSION" \
      org.opencontainers.image.revision="$REVISION" \
      org.opencontainers.image.created="$CREATED"
# HOST: reachable from outside the container (the service's own default is loopback only).
# PATH: `docker exec CONTAINER campusgate console link` runs the command line beside the service.
ENV HOST=0.0.0.0 PORT=3000 PATH=/app/bin:$PATH
WORKDIR /app
EXPOSE 3000
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Node runs as PID 1 and handles SIGTERM itself: it stops taking connections, answers the
# requests in flight and exits 0 (docs/operations.md, "Stopping").
ENTRYPOINT ["node", "/app/dist/main.js"]
USER node
# Last, so that a change of the source rebuilds only these: the app stays root's (the service
# cannot change its own code), /data is the service's.
COPY --from=build /app /app
COPY --from=build --chown=node:node /data /data
VOLUME /data
