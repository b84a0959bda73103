// The --initial-cluster flag's text: `name=url,name=url,...`, one entry per peer
// URL, as etcd prints and parses it (the server's parser is in server/config.ts).

export function formatInitialCluster(members: Map<string, string[]>): string {
  return [...members].flatMap(([name, urls]) => urls.map((u) => `${name}=${u}`)).join(',');
}
