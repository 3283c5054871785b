# syntax=docker/dockerfile:1
# One image for every node; SERVICES picks what a container runs (docs/deployment.md).

# ---- build: dev dependencies, TypeScript build, then production dependencies only
FROM node:22-slim AS build
WORKDIR /app
# Native addons (bcrypt, sqlite3) fall back to compiling when no prebuilt binary fits.
RUN apt-get update \
	&& apt-get install -y --no-install-recommends python3 make g++ \
	&& rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
# public/ (static pages) may be empty, and git keeps no empty folder.
RUN npm run build && npm prune --omit=dev && mkdir -p public

# ---- runtime: compiled code and production node_modules, run as the unprivileged `node` user
FROM node:22-slim AS runtime
ENV NODE_ENV=production \
	PORT=3000 \
	DATA_DIR=/data
WORKDIR /app
# Owned by root and read-only to the app user: the process cannot rewrite its own code.
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/public ./public
RUN mkdir -p /data && chown node:node /data
USER node
EXPOSE 3000
CMD ["node", "dist/lib/start.js"]
