// What a client wrote and an error names back (an unknown member's name, the path of a duplicate member)
// is cut short here: an answer never carries more of the client's text than a name needs, whatever
// the client sent. Each error names such a text once, in `param` or in one `details` entry, never in
// its message too.

/** The longest client-written name an error echoes, in UTF-16 code units (the cut adds an ellipsis). */
export const MAX_ECHOED_NAME_LENGTH = 64;

const ELLIPSIS = '…';

/** `name`, or its first MAX_ECHOED_NAME_LENGTH code units and an ellipsis; a surrogate pair is never split. */
export function echoedName(name: string): string {
  if (name.length <= MAX_ECHOED_NAME_LENGTH) return name;
  const last = name.charCodeAt(MAX_ECHOED_NAME_LENGTH - 1);
  // A high surrogate whose low half would be cut off goes with it.
  const end = last >= 0xd800 && last <= 0xdbff ? MAX_ECHOED_NAME_LENGTH - 1 : MAX_ECHOED_NAME_LENGTH;
  return `${name.slice(0, end)}${ELLIPSIS}`;
}
