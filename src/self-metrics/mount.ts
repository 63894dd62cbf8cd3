import { STATUS_CODES } from 'node:http';
import type { TemplatedApp } from 'uws-pack';
import { errorEnvelope } from '../api/http/envelope.js';
import { readHead, sendJson, type ResponseState } from '../api/http/uws-transport.js';
import type { Services } from '../services.js';
import { answerMetrics } from './endpoint.js';
import { bindServerGauges } from './server-gauges.js';

/**
 * Serve `GET /metrics` on the server's App (an exact route, ahead of the control plane's catch-all)
 * and bind the state gauges to this server. Returns the unbind function for `stop`.
 */
export function mountSelfMetrics(app: TemplatedApp, services: Services): () => void {
  app.get('/metrics', (res, req) => {
    const head = readHead(req);
    const state: ResponseState = { aborted: false, done: false };
    res.onAborted(() => (state.aborted = true));
    void answerMetrics(services, head.headers, head.query).then((answer) => {
      if ('error' in answer) return sendJson(res, state, answer.status, errorEnvelope('GET /metrics', answer.error), answer.error.headers);
      if (state.aborted || state.done) return;
      state.done = true;
      res.cork(() => {
        res.writeStatus(`200 ${STATUS_CODES[200]}`);
        res.writeHeader('content-type', answer.contentType);
        res.end(answer.body);
      });
    });
  });
  return bindServerGauges(services);
}
