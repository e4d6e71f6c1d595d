// Character codes of JSON's structural characters, digits and whitespace, shared by the scanners that
// read JSON a code at a time (request bodies as text, polled records as bytes: the same code either way,
// since every one of them is ASCII).

export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
export const COMMA = 0x2c;
export const COLON = 0x3a;
export const OPEN_OBJECT = 0x7b;
export const CLOSE_OBJECT = 0x7d;
export const OPEN_ARRAY = 0x5b;
export const CLOSE_ARRAY = 0x5d;
export const MINUS = 0x2d;
export const PLUS = 0x2b;
export const DIGIT_ZERO = 0x30;
export const DIGIT_NINE = 0x39;
export const LOWER_F = 0x66;
export const LOWER_N = 0x6e;
export const LOWER_T = 0x74;
export const SPACE = 0x20;
export const TAB = 0x09;
export const LINE_FEED = 0x0a;
export const CARRIAGE_RETURN = 0x0d;
