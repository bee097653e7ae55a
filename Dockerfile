# syntax=docker/dockerfile:1

# Build: the full dependency tree (TypeScript and Vite are devDependencies) bundles src/ and adapters/ into dist/, and
# `npm pack` makes the package a user would install.
FROM node:22-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY scripts ./scripts
COPY bin ./bin
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json bundle.config.ts oncehook.config.json oncehook.schema.json README.md ./
COPY adapters ./adapters
COPY src ./src
RUN npm pack && mv oncehook-*.tgz /tmp/oncehook.tgz

# Run: the package, installed as users install it, with production dependencies only: the compiled build, no
# TypeScript, no tsx. Its install repairs the PostgreSQL driver (scripts/patch-postgres.mjs).
# test/e2e/package.test.ts installs and runs the same tarball the same way.
FROM node:22-slim
ENV NODE_ENV=production
COPY --from=build /tmp/oncehook.tgz /tmp/oncehook.tgz
RUN npm install --global --omit=dev --no-audit --no-fund /tmp/oncehook.tgz && rm /tmp/oncehook.tgz && npm cache clean --force
WORKDIR /app
# Replace it, or point ONCEHOOK_CONFIG at a mounted file; it holds ${NAME} references, never secrets.
COPY oncehook.config.json ./
# Without DATABASE_URL the embedded PGlite writes here; the app's own files stay root-owned and read-only.
ENV ONCEHOOK_DATA_DIR=/data
RUN mkdir /data && chown node:node /data
USER node
EXPOSE 8080
# Node as PID 1 is fine here: oncehook handles SIGTERM, SIGINT and SIGHUP (a reload) itself, and its only children,
# the transform processes, are its own, which Node reaps.
CMD ["oncehook", "serve"]
