/**
 * Where a sandbox company is at home, by its country: the ATM its cash withdrawals are made at and the office its
 * physical cards ship to, both in a city of that country (a Saudi company's are in Riyadh, not Dubai).
 */

/** A company's home places; a city is null only for a country this table does not know. */
export interface Home {
  readonly atm: { readonly name: string; readonly city: string | null };
  readonly office: { readonly line1: string; readonly city: string | null };
}

const HOMES: Readonly<Record<string, Home>> = {
  AE: { atm: { name: "Emirates NBD ATM", city: "Dubai" }, office: { line1: "Office 1204, Business Bay", city: "Dubai" } },
  SA: { atm: { name: "Al Rajhi Bank ATM", city: "Riyadh" }, office: { line1: "Office 805, King Fahd Road", city: "Riyadh" } },
};

/** The home places of a company in `country` (ISO 3166 alpha-2). */
export function homeOf(country: string): Home {
  return HOMES[country] ?? { atm: { name: "Bank ATM", city: null }, office: { line1: "Head office", city: null } };
}
