// Result images are real PNG files drawn from the request: the same seed and dimensions give the same
// bytes, whichever job or account asked, and the picture keeps the requested aspect ratio.
import { inflateSync } from 'node:zlib';
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { SimulatorServer } from '../../src/simulator/server.ts';
import { AUTH, call, postImage, startTestSimulator } from './simulator-client.ts';

let simulator: SimulatorServer;
beforeAll(async () => {
  simulator = await startTestSimulator();
});
afterAll(async () => {
  await simulator.close();
});

async function resultUrls(body: unknown, auth = AUTH.alpha): Promise<string[]> {
  const created = await postImage(simulator, body, auth);
  const { requestId } = (created.body as { data: { requestId: string } }).data;
  const polled = await call(simulator, 'GET', `/v1/images/generations/${requestId}`, { auth });
  return (polled.body as { data: { results: { url: string }[] } }).data.results.map((result) => result.url);
}

async function download(url: string): Promise<Buffer> {
  const response = await fetch(url);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toBe('image/png');
  return Buffer.from(await response.arrayBuffer());
}

function readPng(png: Buffer) {
  expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
  const width = png.readUInt32BE(16);
  const height = png.readUInt32BE(20);
  const idatLength = png.readUInt32BE(33);
  const pixels = inflateSync(png.subarray(41, 41 + idatLength));
  return { width, height, bitDepth: png[24], colorType: png[25], pixelBytes: pixels.length };
}

test('the same seed and dimensions give identical bytes, from any job and any account', async () => {
  const request = { seed: 123456789, dimensions: { width: 1024, height: 768 } };
  const [first] = await resultUrls(request);
  const [second] = await resultUrls(request, AUTH.beta);
  expect(first).not.toBe(second);
  expect(await download(first!)).toEqual(await download(second!));
});

test('another seed gives other bytes; sample i of seed s is sample 0 of seed s+i', async () => {
  const [sample0, sample1] = await resultUrls({ seed: 500, samples: 2 });
  const [seed501] = await resultUrls({ seed: 501 });
  const [bytes0, bytes1, bytes501] = await Promise.all([sample0!, sample1!, seed501!].map(download));
  expect(bytes0).not.toEqual(bytes1);
  expect(bytes1).toEqual(bytes501);
});

test.each([
  [{ width: 1024, height: 1024 }, 64, 64],
  [{ width: 2048, height: 1024 }, 64, 32],
  [{ width: 128, height: 2048 }, 4, 64],
])('a valid RGB thumbnail with the aspect ratio of %j', async (dimensions, width, height) => {
  const [url] = await resultUrls({ seed: 1, dimensions });
  expect(readPng(await download(url!))).toEqual({
    width,
    height,
    bitDepth: 8,
    colorType: 2,
    pixelBytes: height * (1 + width * 3),
  });
});

test('a file URL needs no credentials; an unknown one is 404', async () => {
  const [url] = await resultUrls({ seed: 9 });
  expect((await fetch(url!)).status).toBe(200);
  const missing = await fetch(url!.replace(/0\.png$/, '5.png'));
  expect(missing.status).toBe(404);
  expect(await missing.json()).toEqual({
    status: 404,
    error: { code: 'file_not_found', type: 'not_found_error', message: 'no such file' },
  });
});
