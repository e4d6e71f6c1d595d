// RFC 3339 date-times (key expiry): accepted in any RFC 3339 spelling, kept as one canonical ISO string.

const RFC3339_DATE_TIME =
  /^(\d{4})-(0[1-9]|1[0-2])-(\d{2})[Tt ]([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)$/;

export function isRfc3339DateTime(value: string): boolean {
  const match = RFC3339_DATE_TIME.exec(value);
  if (match === null) return false;
  const year = Number(match[1]);
  const month = Number(match[2]);
  const day = Number(match[3]);
  const lastDayOfMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  return day >= 1 && day <= lastDayOfMonth;
}

/** `2027-06-30 02:00:00+02:00` becomes `2027-06-30T00:00:00.000Z`; the value must be RFC 3339. */
export function toIsoDateTime(value: string): string {
  return new Date(value.toUpperCase().replace(' ', 'T')).toISOString();
}
