// Reads the YAML text into plain data, refusing what has no place in a configuration file: duplicate
// keys, several documents, explicit tags (`!!binary`, `!custom`) and keys that are not plain scalars.
// YAML 1.2's core schema keeps an unquoted timestamp a string, so `expiresAt` is a string either way.
import { isScalar, LineCounter, parseDocument, visit, type Node } from 'yaml';
import { ConfigError, type ConfigProblem } from './problems.ts';

function firstLine(message: string): string {
  return message.split('\n', 1)[0] ?? message;
}

export function parseYamlText(text: string): unknown {
  const lines = new LineCounter();
  const document = parseDocument(text, { schema: 'core', uniqueKeys: true, lineCounter: lines });
  const at = (offset: number | undefined): string => {
    const { line, col } = lines.linePos(offset ?? 0);
    return `line ${line}, column ${col}`;
  };
  const problems: ConfigProblem[] = [...document.errors, ...document.warnings].map((error) => ({
    path: at(error.pos[0]),
    message:
      error.code === 'DUPLICATE_KEY'
        ? 'the same key appears twice in one mapping'
        : // The yaml package appends the position and a source excerpt; the path already says where.
          firstLine(error.message).replace(/ at line \d+, column \d+:?$/, ''),
  }));
  visit(document, {
    Node(_key, node) {
      if (node.tag !== undefined) {
        problems.push({
          path: at(node.range?.[0]),
          message: `explicit YAML tags are not allowed (found ${node.tag})`,
        });
      }
    },
    Pair(_key, pair) {
      if (!isScalar(pair.key)) {
        const key = pair.key as Node | null;
        problems.push({ path: at(key?.range?.[0]), message: 'keys must be plain names' });
      }
    },
  });
  if (problems.length > 0) throw new ConfigError(problems);
  return document.toJS() as unknown;
}
