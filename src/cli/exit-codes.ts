// Exit codes shared by the gengate commands (contract section 1: 2 means invalid input or configuration).
export const EXIT_OK = 0;
export const EXIT_INVALID = 2;
