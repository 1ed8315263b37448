// What the node agent takes from the HTTP library undici, and nothing else:
// its connection pools (Agent, ProxyAgent) and fetch, loaded from their own
// files. undici's index loads every part of the library at once (HTTP/2,
// mocks and snapshot recording, caches, interceptors, WebSocket,
// EventSource: 109 of its files, against 52 for these three); client-node's
// config.js and watch.js and our shared dispatchers need these three names.
// hooks.ts points client-node's imports here, and shared-dispatcher.ts
// imports Agent from here (docs/decisions/0027).
import type * as Undici from 'undici';
import AgentClass from 'undici/lib/dispatcher/agent.js';
import DispatcherClass from 'undici/lib/dispatcher/dispatcher.js';
import ProxyAgentClass from 'undici/lib/dispatcher/proxy-agent.js';
import dispatcherApi from 'undici/lib/api/index.js';
import fetchModule from 'undici/lib/web/fetch/index.js';

// As undici's index does when loaded: every dispatcher gets the request,
// stream, pipeline, upgrade and connect methods.
Object.assign(DispatcherClass.prototype, dispatcherApi);

export const Agent: typeof Undici.Agent = AgentClass;
export const ProxyAgent: typeof Undici.ProxyAgent = ProxyAgentClass;
export const fetch: typeof Undici.fetch = fetchModule.fetch;
