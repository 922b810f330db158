import type { WebhookEvent } from '@hookgate/core';
import {
  AFTER_ANSWER,
  httpBindingSuite,
  type MakeServer,
  UNANSWERED,
} from '@hookgate/http-conformance';
import {
  type ArgumentsHost,
  Catch,
  Controller,
  type ExceptionFilter,
  HttpException,
  type HttpServer,
  Module,
  NotFoundException,
  Post,
  Res,
  UseInterceptors,
} from '@nestjs/common';
import { Webhook, WebhookInterceptor } from '../src/index.js';
import { createApp, PLATFORMS, type Platform, serve } from './nest-app.js';

/**
 * Above the suite's largest body (the default `limit` of 1 MiB, and just over it), so that the
 * limit the suite sees is the binding's: the platform's parser answers a body over its own
 * limit first (Express's JSON parser: 100 kB by default).
 */
const PLATFORM_BODY_LIMIT = 4 * 1024 * 1024;

function server(platform: Platform): MakeServer {
  return async ({ options, handle, onError, bodyParser }) => {
    const interceptor = new WebhookInterceptor(options);
    let http!: HttpServer;

    @Controller()
    class WebhookController {
      @Post('webhook')
      @UseInterceptors(interceptor)
      async receive(
        @Webhook() event: WebhookEvent,
        @Res({ passthrough: true }) res: unknown,
      ): Promise<unknown> {
        const reply = await handle(event);
        // A Nest handler always answers with what it returns; the nearest to a handler that
        // answers nothing is Nest's answer to a request no route takes.
        if (reply === UNANSWERED) throw new NotFoundException();
        if (reply.afterAnswer === 'throw') {
          http.reply(res, reply.body, reply.status);
          throw AFTER_ANSWER;
        }
        http.status(res, reply.status);
        return reply.body;
      }
    }

    // An ordinary exception filter: it sets the status without checking whether the answer left.
    @Catch()
    class Errors implements ExceptionFilter {
      catch(error: unknown, host: ArgumentsHost): void {
        onError(error);
        const res = host.switchToHttp().getResponse();
        const status = error instanceof HttpException ? error.getStatus() : 500;
        http.status(res, status);
        if (!http.isHeadersSent(res)) http.reply(res, { status: 'error' }, status);
      }
    }

    @Module({ controllers: [WebhookController] })
    class AppModule {}

    // Nest's parser always reads the body before the interceptor: 'keep-raw' is the documented
    // setup (`rawBody: true`), as is the default; 'drop-raw' is an app created without it.
    const app = await createApp(platform, AppModule, {
      rawBody: bodyParser !== 'drop-raw',
      bodyLimit: PLATFORM_BODY_LIMIT,
    });
    app.useGlobalFilters(new Errors());
    http = app.getHttpAdapter();
    return serve(app);
  };
}

// Nest's platform parser reads every body before any interceptor runs (`rawBody: true`), so the
// suite's tests of bodies that parser answers first (malformed JSON, a streamed body of several
// JSON documents, a client gone mid-body) are left out with `parsedBody`; `nest.test.ts` checks
// what happens instead: nothing is claimed and the handler does not run.
for (const platform of PLATFORMS) {
  httpBindingSuite(`the HTTP suite on Nest's ${platform} platform`, server(platform), {
    parsedBody: true,
  });
}
