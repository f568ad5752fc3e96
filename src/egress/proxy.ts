// A proxy in forgesync's environment (http_proxy, https_proxy, all_proxy, their
// upper-case forms; NODE_USE_ENV_PROXY for Node's own support) is operator
// configuration, and trusted as such: the proxy's own address is not checked
// against the egress policy (it is often on a private network). The target
// still is: its name is resolved here and every address must pass, exactly as
// without a proxy, so a proxy does not turn forgesync into a way into the
// proxy's networks for names this machine can resolve. Pinning cannot follow
// the request through a proxy (the proxy resolves the name again); a proxy
// that must not reach internal hosts has to enforce that itself.
//
// forgesync makes no request of its own through a proxy: Node 20 does not speak
// to proxies, and going direct would bypass what the operator configured. So
// with a proxy configured the in-process requests step aside (git, which uses
// the proxy, is asked instead), and redirects of git upstreams are not
// resolved in advance: git is told not to follow them (http.followRedirects=false),
// so an upstream that redirects fails with git's "returned error: 30x" and its
// URL must be set to the final location.

const PROXY_ENV = /^((https?|all)_proxy|NODE_USE_ENV_PROXY)$/i;

/** Whether a proxy is configured in `env` (a non-empty proxy variable): then forgesync sends nothing itself. */
export function proxyConfigured(env: NodeJS.ProcessEnv = process.env): boolean {
  return Object.entries(env).some(([name, value]) => Boolean(value) && PROXY_ENV.test(name));
}
