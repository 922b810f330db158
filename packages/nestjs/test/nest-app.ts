// A Nest app on either platform, as the tests start it: `rawBody: true` (what the docs say),
// logger off, and connections closed with the app.
import 'reflect-metadata';
import type { TestServer } from '@hookgate/http-conformance';
import type { INestApplication, Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';

/** Nest's two HTTP platforms. */
export const PLATFORMS = ['express', 'fastify'] as const;
export type Platform = (typeof PLATFORMS)[number];

export interface AppOptions {
  /** Create the app with `rawBody: true`. @default true */
  rawBody?: boolean;
  /** The platform's own body limit, in bytes (Express's JSON parser, Fastify's `bodyLimit`). */
  bodyLimit?: number;
}

/** Create a Nest app for `module` on `platform`, not yet listening. */
export async function createApp(
  platform: Platform,
  module: Type,
  { rawBody = true, bodyLimit }: AppOptions = {},
): Promise<INestApplication> {
  const options = { rawBody, logger: false as const };
  if (platform === 'fastify') {
    const adapter = new FastifyAdapter({
      forceCloseConnections: true,
      ...(bodyLimit ? { bodyLimit } : {}),
    });
    return NestFactory.create<NestFastifyApplication>(module, adapter, options);
  }
  const app = await NestFactory.create<NestExpressApplication>(module, {
    ...options,
    forceCloseConnections: true,
  });
  // Before init, this replaces Nest's default JSON parser (and keeps `rawBody`).
  if (bodyLimit) app.useBodyParser('json', { limit: bodyLimit });
  return app;
}

/** Listen on an ephemeral 127.0.0.1 port. */
export async function serve(app: INestApplication): Promise<TestServer> {
  await app.listen(0, '127.0.0.1');
  const url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
  return { url, close: () => app.close() };
}
