import { StoreError } from '../errors.js';

/**
 * Splits a tar entry name into clean components ("./a//b/" → ["a", "b"]; "." → []).
 * Absolute names and ".." components are refused outright rather than rewritten:
 * a layer that contains them was not produced by an honest image builder.
 */
export function entryComponents(name: string, entry: string, what = 'path'): string[] {
  if (name.startsWith('/')) {
    throw new StoreError('unsafe-path', `layer entry ${JSON.stringify(entry)} has an absolute ${what} ${JSON.stringify(name)}`);
  }
  const components: string[] = [];
  for (const component of name.split('/')) {
    if (component === '' || component === '.') continue;
    if (component === '..') {
      throw new StoreError('unsafe-path', `layer entry ${JSON.stringify(entry)} has a ${what} with a ".." component: ${JSON.stringify(name)}`);
    }
    components.push(component);
  }
  return components;
}

/** "" stands for the layer root. */
export function joinComponents(components: readonly string[]): string {
  return components.join('/');
}

export function parentOf(path: string): string {
  const slash = path.lastIndexOf('/');
  return slash === -1 ? '' : path.slice(0, slash);
}

/** Every proper ancestor of a relative path, outermost first ("a/b/c" → ["a", "a/b"]). */
export function ancestorsOf(path: string): string[] {
  const out: string[] = [];
  let index = path.indexOf('/');
  while (index !== -1) {
    out.push(path.slice(0, index));
    index = path.indexOf('/', index + 1);
  }
  return out;
}

export function isWithin(path: string, ancestor: string): boolean {
  return ancestor === '' || path === ancestor || path.startsWith(`${ancestor}/`);
}
