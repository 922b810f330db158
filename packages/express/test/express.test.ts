import {
  AFTER_ANSWER,
  httpBindingSuite,
  listen,
  onRedis,
  type ServerSetup,
  UNANSWERED,
} from '@hookgate/http-conformance';
import type { ErrorRequestHandler } from 'express';
import express4 from 'express4';
import express5 from 'express5';
import { hookgate, keepRawBody } from '../src/index.js';

function server(express: typeof express5) {
  return ({ options, handle, onError, bodyParser }: ServerSetup) => {
    const app = express();
    if (bodyParser === 'keep-raw') app.use(express.json({ verify: keepRawBody }));
    if (bodyParser === 'drop-raw') app.use(express.json());
    app.post('/webhook', hookgate(options), (req, res, next) => {
      // Express 4 does not catch a rejected handler: pass errors on by hand, as apps do.
      handle(req.webhook!).then((reply) => {
        if (reply === UNANSWERED) return next(); // on to Express's own 404
        if (reply.body === undefined) res.status(reply.status).end();
        else res.status(reply.status).json(reply.body);
        if (reply.afterAnswer === 'throw') next(AFTER_ANSWER);
      }, next);
    });
    // An ordinary error handler: it does not check res.headersSent.
    const errors: ErrorRequestHandler = (error, _req, res, _next) => {
      onError(error);
      res.status(500);
      if (!res.headersSent) res.json({ status: 'error' });
    };
    app.use(errors);
    return listen(app);
  };
}

httpBindingSuite('express 4', server(express4));
httpBindingSuite('express 5', server(express5));
httpBindingSuite('express 5 on ioredis', server(express5), { store: onRedis() });
