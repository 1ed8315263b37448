// Types for the undici files src/kube/lean/undici.ts loads one by one (the
// package types its index only). Each file's module.exports, as Node's ESM
// loader and esbuild hand a CommonJS module to a default import.
declare module 'undici/lib/dispatcher/agent.js' {
  import type { Agent } from 'undici';
  const AgentClass: typeof Agent;
  export default AgentClass;
}
declare module 'undici/lib/dispatcher/dispatcher.js' {
  import type { Dispatcher } from 'undici';
  const DispatcherClass: typeof Dispatcher;
  export default DispatcherClass;
}
declare module 'undici/lib/dispatcher/proxy-agent.js' {
  import type { ProxyAgent } from 'undici';
  const ProxyAgentClass: typeof ProxyAgent;
  export default ProxyAgentClass;
}
declare module 'undici/lib/api/index.js' {
  const api: Record<'request' | 'stream' | 'pipeline' | 'upgrade' | 'connect', unknown>;
  export default api;
}
declare module 'undici/lib/web/fetch/index.js' {
  import type { fetch } from 'undici';
  const fetchModule: { fetch: typeof fetch };
  export default fetchModule;
}
