/**
 * Checks a package README's "Where things are" section, and its other tables of paths, against the
 * package's tree: every path they name exists, and every source file under `src/` is named, or lies
 * in a directory that is.
 *
 * A table's first column names paths in backquotes, several to a cell separated by commas
 * (`src/commands/up.ts`, `down.ts`: a bare name after a path is taken in that path's directory).
 * A path is looked up, in order, beside the cell's previous path, in a directory the table's
 * header names (`calls/` file), in `src/`, in the package directory and in the repository root.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';

export interface ReadmeTreeReport {
  /** Paths the section names that exist under none of the places they are looked up in. */
  missing: string[];
  /** Source files (relative to the package) that no entry names or covers. */
  unnamed: string[];
}

const PATH_LIKE = /^[\w.-][\w.@-]*(\/[\w.@-]+)*\/?$/;
const FILE_EXTENSIONS = /\.(ts|mjs|js|c|py|sh|json|toml)$/;

/** The lines of the section headed "Where things are", up to the next heading of its level or above. */
export function whereThingsAreSection(readme: string): string[] | undefined {
  const lines = readme.split('\n');
  const start = lines.findIndex((l) => /^#+\s+Where things are\s*$/i.test(l));
  if (start < 0) return undefined;
  const level = /^#+/.exec(lines[start]!)![0].length;
  const end = lines.findIndex((l, i) => i > start && /^#+\s/.test(l) && /^#+/.exec(l)![0].length <= level);
  return lines.slice(start + 1, end < 0 ? undefined : end);
}

function isPath(token: string): boolean {
  return PATH_LIKE.test(token) && (token.includes('/') || FILE_EXTENSIONS.test(token));
}

function backquoted(cell: string): string[] {
  return [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
}

function cells(row: string): string[] {
  return row.trim().replace(/^\|/, '').replace(/\|$/, '').split('|');
}

export interface NamedPath {
  token: string;
  /** Directories it is looked up in, most specific first. */
  bases: string[];
}

/** Every path the section's tables name in their first column, with where each is looked up. */
export function namedPaths(section: string[], packageDir: string, repoRoot: string): NamedPath[] {
  const named: NamedPath[] = [];
  let headerDirs: string[] = [];
  let inTable = false;
  for (const line of section) {
    if (!line.trim().startsWith('|')) {
      inTable = false;
      continue;
    }
    const first = cells(line)[0] ?? '';
    if (!inTable) {
      // A table's header: a directory it names is where its bare names live.
      inTable = true;
      headerDirs = backquoted(first).filter((t) => t.endsWith('/')).flatMap((d) => [join(packageDir, 'src', d), join(packageDir, d)]);
      continue;
    }
    if (/^\s*:?-+:?\s*$/.test(first)) continue;
    let previousDirs: string[] = [];
    for (const token of backquoted(first)) {
      if (!isPath(token)) continue;
      const bases = [...(token.includes('/') ? [] : previousDirs), ...headerDirs, join(packageDir, 'src'), packageDir, repoRoot];
      named.push({ token, bases });
      if (token.includes('/')) previousDirs = bases.map((b) => dirname(join(b, token.replace(/\/$/, ''))));
    }
  }
  return named;
}

function sourceFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const found: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...sourceFiles(path));
    else if (entry.isFile() && /\.(ts|py|c)$/.test(entry.name) && !/\.(test|d)\.ts$/.test(entry.name)) found.push(path);
  }
  return found;
}

/** The lines of every table whose header's first cell says it lists paths (module, file, folder, `dir/` file), anywhere. */
export function pathTables(readme: string): string[] {
  const out: string[] = [];
  let inPathTable = false;
  let inTable = false;
  for (const line of readme.split('\n')) {
    const isRow = line.trim().startsWith('|');
    if (isRow && !inTable) inPathTable = /^\s*(module|file|folder|`[\w.-]+\/` file)\s*$/.test(cells(line)[0] ?? '');
    if (!isRow && inTable && inPathTable) out.push('');
    inTable = isRow;
    if (isRow && inPathTable) out.push(line);
  }
  return out;
}

/**
 * What the README in `packageDir` gets wrong, or undefined when it has neither a "Where things are"
 * section nor a table of paths. Named paths are checked in the section and in every table of
 * paths; that every source file is named is checked only where there is a section. `src/index.ts`,
 * the package's export list that package.json names, need not be in it.
 */
export function checkReadmeTree(packageDir: string, repoRoot: string): ReadmeTreeReport | undefined {
  const readme = readFileSync(join(packageDir, 'README.md'), 'utf8');
  const section = whereThingsAreSection(readme);
  const tables = pathTables(readme);
  if (!section && tables.length === 0) return undefined;
  const missing: string[] = [];
  const files = new Set<string>();
  const dirs: string[] = [];
  for (const { token, bases } of namedPaths([...(section ?? []), '', ...tables], packageDir, repoRoot)) {
    const found = bases.map((b) => join(b, token)).filter((p) => existsSync(p));
    if (found.length === 0 && !missing.includes(token)) missing.push(token);
    for (const path of found) {
      if (token.endsWith('/')) dirs.push(path.replace(/\/$/, ''));
      else files.add(path);
    }
  }
  const unnamed = section
    ? sourceFiles(join(packageDir, 'src'))
        .filter((f) => f !== join(packageDir, 'src', 'index.ts'))
        .filter((f) => !files.has(f) && !dirs.some((d) => f.startsWith(`${d}${sep}`)))
        .map((f) => relative(packageDir, f))
    : [];
  return { missing, unnamed };
}
