// Runs in every test file (vitest setupFiles): the folders of makeTempFolder are removed after the file's
// own hooks have stopped what reads them.
import { afterAll } from 'vitest';
import { removeTempFolders } from './temp-folders.ts';

afterAll(removeTempFolders);
