# syntax=docker/dockerfile:1

# Build: the full dependency tree (TypeScript is a devDependency) compiles src/ and adapters/ into dist/.
FROM node:22-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY scripts ./scripts
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY adapters ./adapters
COPY src ./src
RUN npm run build

# Run: production dependencies and the compiled output only. tsx is absent, so bin/oncehook.js runs dist/.
# test/e2e/production-build.test.ts installs and runs exactly this set of files.
FROM node:22-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
# The install repairs the PostgreSQL driver (scripts/patch-postgres.mjs), so the script comes first.
COPY scripts/patch-postgres.mjs ./scripts/
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY bin ./bin
# Replace it, or point ONCEHOOK_CONFIG at a mounted file; it holds ${NAME} references, never secrets.
COPY oncehook.config.json ./
# Without DATABASE_URL the embedded PGlite writes here; the app's own files stay root-owned and read-only.
ENV ONCEHOOK_DATA_DIR=/data
RUN mkdir /data && chown node:node /data
USER node
EXPOSE 8080
# Node as PID 1 is fine here: oncehook handles SIGTERM and SIGINT itself and spawns no children.
CMD ["node", "bin/oncehook.js", "serve"]
