// Exit codes of the gengate process and commands (README.md: 2 means invalid input or
// configuration).
export const EXIT_OK = 0;
export const EXIT_INVALID = 2;
/** A server could not listen on its configured address (src/cli/listen-failure.ts). */
export const EXIT_CANNOT_LISTEN = 3;
