// Small, real PNG images drawn deterministically from a request: the same seed and dimensions always
// give the same bytes, so a test can tell results apart and pin them.
import { crc32, deflateSync } from 'node:zlib';

/** Results are thumbnails: the longer side, in pixels; the aspect ratio follows the request. */
const THUMBNAIL_LONG_SIDE_PX = 64;
const DISC_COUNT = 4;
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const COLOR_TYPE_RGB = 2;
const BIT_DEPTH = 8;
const FILTER_NONE = 0;

export interface PngRequest {
  seed: bigint;
  width: number;
  height: number;
}

type Rgb = readonly [number, number, number];

// mulberry32: a tiny, well-known 32-bit PRNG; plenty for picking colours and shapes.
function seededRandom(seed: bigint): () => number {
  let state = Number((seed ^ (seed >> 32n)) & 0xffffffffn);
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 0x1_0000_0000;
  };
}

function thumbnailSize(width: number, height: number): { width: number; height: number } {
  const scale = THUMBNAIL_LONG_SIDE_PX / Math.max(width, height);
  return { width: Math.max(1, Math.round(width * scale)), height: Math.max(1, Math.round(height * scale)) };
}

function chunk(type: string, data: Buffer): Buffer {
  const header = Buffer.alloc(4);
  header.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const checksum = Buffer.alloc(4);
  checksum.writeUInt32BE(crc32(body));
  return Buffer.concat([header, body, checksum]);
}

function drawPixels(request: PngRequest, width: number, height: number): Buffer {
  const random = seededRandom(request.seed);
  const byte = () => Math.floor(random() * 256);
  const color = (): Rgb => [byte(), byte(), byte()];
  const [from, to] = [color(), color()];
  const discs = Array.from({ length: DISC_COUNT }, () => ({
    x: random() * width,
    y: random() * height,
    radius: (0.1 + random() * 0.3) * Math.max(width, height),
    fill: color(),
  }));
  const rowBytes = 1 + width * 3;
  const pixels = Buffer.alloc(rowBytes * height);
  for (let y = 0; y < height; y++) {
    pixels[y * rowBytes] = FILTER_NONE;
    for (let x = 0; x < width; x++) {
      const mix = (x + y) / Math.max(1, width + height - 2);
      const blend = (a: number, b: number) => Math.round(a + (b - a) * mix);
      let rgb: Rgb = [blend(from[0], to[0]), blend(from[1], to[1]), blend(from[2], to[2])];
      for (const disc of discs) {
        if ((x - disc.x) ** 2 + (y - disc.y) ** 2 <= disc.radius ** 2) rgb = disc.fill;
      }
      pixels.set(rgb, y * rowBytes + 1 + x * 3);
    }
  }
  return pixels;
}

/** A thumbnail PNG for this seed and these dimensions; identical inputs give identical bytes. */
export function renderPng(request: PngRequest): Buffer {
  const { width, height } = thumbnailSize(request.width, request.height);
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([BIT_DEPTH, COLOR_TYPE_RGB, 0, 0, 0], 8);
  return Buffer.concat([
    PNG_SIGNATURE,
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(drawPixels(request, width, height), { level: 9 })),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}
