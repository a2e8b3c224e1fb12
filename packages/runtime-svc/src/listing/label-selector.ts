/** CRI label selectors are plain equality: every key given must be present with exactly that value. */
export function matchesLabels(labels: Readonly<Record<string, string>>, selector: Readonly<Record<string, string>> | null | undefined): boolean {
  if (!selector) return true;
  return Object.entries(selector).every(([key, value]) => labels[key] === value);
}
