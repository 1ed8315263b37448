// What `embedded --netns` runs at most, and its scenario: pure, so that the
// command line parser shows them in --help without loading the namespaces'
// code (test/cli/startup.test.ts).

/** --netns runs at most this many nodes: each is a namespace, each pod one more, each ADD two processes. */
export const MAX_NETNS_NODES = 4;
/** --netns runs at most this many pods created by the scenario. */
export const MAX_NETNS_PODS = 120;
/** The built-in scenario --netns runs when none is named. */
export const NETNS_SCENARIO = 'netns';
