/**
 * The process a container runs, by Kubernetes' rules: `command` replaces the image's Entrypoint
 * (and then the image's Cmd is dropped too), `args` replaces the image's Cmd.
 */
export function resolveCommand(
  image: { entrypoint?: readonly string[] | null; cmd?: readonly string[] | null },
  command: readonly string[],
  args: readonly string[],
): string[] {
  if (command.length > 0) return [...command, ...args];
  const entrypoint = image.entrypoint ?? [];
  return [...entrypoint, ...(args.length > 0 ? args : (image.cmd ?? []))];
}
