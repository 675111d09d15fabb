/**
 * Reference tables that make seeded data look like real corporate card spend
 * in the Gulf: merchants with their MCC, ledger accounts, tax rates, segments.
 */

export interface MerchantProfile {
  readonly name: string;
  readonly city: string;
  /** ISO 3166-1 alpha-2. */
  readonly country: string;
  readonly mcc: string;
  /** Currency the merchant charges in. */
  readonly currency: string;
  readonly min: number;
  readonly max: number;
  /** Key into SUPPLIERS. */
  readonly supplier: string;
  /** Key into CHART_OF_ACCOUNTS (account number). */
  readonly account: string;
  readonly expenseCategory: string;
  readonly lineItems: readonly string[];
}

export const MCC_DESCRIPTIONS: Readonly<Record<string, string>> = {
  "4121": "Taxicabs and Limousines",
  "4215": "Courier Services - Air and Ground, Freight Forwarders",
  "4511": "Airlines, Air Carriers",
  "4722": "Travel Agencies and Tour Operators",
  "4784": "Tolls and Bridge Fees",
  "4814": "Telecommunication Services",
  "4900": "Utilities - Electric, Gas, Water, Sanitary",
  "5045": "Computers, Peripherals and Software",
  "5411": "Grocery Stores, Supermarkets",
  "5541": "Service Stations",
  "5712": "Furniture, Home Furnishings and Equipment Stores",
  "5734": "Computer Software Stores",
  "5812": "Eating Places, Restaurants",
  "5814": "Fast Food Restaurants",
  "5818": "Digital Goods - Large Digital Goods Merchant",
  "5943": "Stationery, Office and School Supply Stores",
  "6011": "Automated Cash Disbursements",
  "7011": "Lodging - Hotels, Motels, Resorts",
  "7311": "Advertising Services",
  "7372": "Computer Programming, Data Processing, Integrated Systems Design",
};

export const MERCHANTS: readonly MerchantProfile[] = [
  { name: "Amazon Web Services", city: "Seattle", country: "US", mcc: "7372", currency: "USD", min: 40, max: 2400, supplier: "aws", account: "6210", expenseCategory: "Cloud Hosting", lineItems: ["EC2 compute", "S3 storage", "Data transfer"] },
  { name: "Google Workspace", city: "Dublin", country: "IE", mcc: "5818", currency: "USD", min: 12, max: 480, supplier: "google", account: "6200", expenseCategory: "Software Subscriptions", lineItems: ["Business Standard seats"] },
  { name: "Microsoft 365", city: "Dublin", country: "IE", mcc: "5734", currency: "USD", min: 20, max: 900, supplier: "microsoft", account: "6200", expenseCategory: "Software Subscriptions", lineItems: ["E3 licences", "Teams Premium"] },
  { name: "Atlassian", city: "Sydney", country: "AU", mcc: "5734", currency: "USD", min: 30, max: 1500, supplier: "atlassian", account: "6200", expenseCategory: "Software Subscriptions", lineItems: ["Jira Software Cloud", "Confluence Cloud"] },
  { name: "GitHub", city: "San Francisco", country: "US", mcc: "5734", currency: "USD", min: 4, max: 840, supplier: "github", account: "6200", expenseCategory: "Software Subscriptions", lineItems: ["Team plan seats", "Actions minutes"] },
  { name: "Emirates", city: "Dubai", country: "AE", mcc: "4511", currency: "AED", min: 850, max: 9800, supplier: "emirates", account: "6100", expenseCategory: "Travel - Flights", lineItems: ["Economy fare", "Seat selection"] },
  { name: "flydubai", city: "Dubai", country: "AE", mcc: "4511", currency: "AED", min: 420, max: 3200, supplier: "flydubai", account: "6100", expenseCategory: "Travel - Flights", lineItems: ["Value fare", "Checked baggage"] },
  { name: "Booking.com", city: "Amsterdam", country: "NL", mcc: "4722", currency: "EUR", min: 90, max: 1400, supplier: "booking", account: "6110", expenseCategory: "Travel - Accommodation", lineItems: ["Hotel stay"] },
  { name: "Marriott Marquis Riyadh", city: "Riyadh", country: "SA", mcc: "7011", currency: "SAR", min: 600, max: 4200, supplier: "marriott", account: "6110", expenseCategory: "Travel - Accommodation", lineItems: ["Room charge", "Breakfast"] },
  { name: "Careem", city: "Dubai", country: "AE", mcc: "4121", currency: "AED", min: 18, max: 160, supplier: "careem", account: "6120", expenseCategory: "Local Transport", lineItems: ["Ride"] },
  { name: "Uber", city: "London", country: "GB", mcc: "4121", currency: "GBP", min: 8, max: 70, supplier: "uber", account: "6120", expenseCategory: "Local Transport", lineItems: ["Ride"] },
  { name: "Salik", city: "Dubai", country: "AE", mcc: "4784", currency: "AED", min: 50, max: 400, supplier: "salik", account: "6120", expenseCategory: "Local Transport", lineItems: ["Toll top-up"] },
  { name: "ENOC", city: "Dubai", country: "AE", mcc: "5541", currency: "AED", min: 60, max: 320, supplier: "enoc", account: "6130", expenseCategory: "Fuel", lineItems: ["Super 98 fuel"] },
  { name: "ADNOC Distribution", city: "Abu Dhabi", country: "AE", mcc: "5541", currency: "AED", min: 60, max: 300, supplier: "adnoc", account: "6130", expenseCategory: "Fuel", lineItems: ["Special 95 fuel"] },
  { name: "Carrefour", city: "Dubai", country: "AE", mcc: "5411", currency: "AED", min: 35, max: 900, supplier: "carrefour", account: "6320", expenseCategory: "Office Pantry", lineItems: ["Pantry supplies", "Water"] },
  { name: "Talabat", city: "Dubai", country: "AE", mcc: "5812", currency: "AED", min: 45, max: 650, supplier: "talabat", account: "6300", expenseCategory: "Meals & Entertainment", lineItems: ["Team lunch"] },
  { name: "Starbucks", city: "Dubai", country: "AE", mcc: "5814", currency: "AED", min: 19, max: 180, supplier: "starbucks", account: "6300", expenseCategory: "Meals & Entertainment", lineItems: ["Coffee"] },
  { name: "Zuma Dubai", city: "Dubai", country: "AE", mcc: "5812", currency: "AED", min: 400, max: 3800, supplier: "zuma", account: "6310", expenseCategory: "Client Entertainment", lineItems: ["Client dinner"] },
  { name: "Jarir Bookstore", city: "Riyadh", country: "SA", mcc: "5943", currency: "SAR", min: 25, max: 700, supplier: "jarir", account: "6400", expenseCategory: "Office Supplies", lineItems: ["Stationery", "Printer toner"] },
  { name: "IKEA", city: "Dubai", country: "AE", mcc: "5712", currency: "AED", min: 150, max: 5200, supplier: "ikea", account: "6410", expenseCategory: "Office Furniture", lineItems: ["Desk", "Office chair"] },
  { name: "Sharaf DG", city: "Dubai", country: "AE", mcc: "5045", currency: "AED", min: 200, max: 7800, supplier: "sharafdg", account: "6420", expenseCategory: "IT Equipment", lineItems: ["Laptop", "Monitor", "Accessories"] },
  { name: "LinkedIn Ads", city: "Dublin", country: "IE", mcc: "7311", currency: "USD", min: 100, max: 3000, supplier: "linkedin", account: "6500", expenseCategory: "Advertising", lineItems: ["Sponsored content campaign"] },
  { name: "Meta Ads", city: "Dublin", country: "IE", mcc: "7311", currency: "USD", min: 80, max: 2500, supplier: "meta", account: "6500", expenseCategory: "Advertising", lineItems: ["Lead generation campaign"] },
  { name: "DEWA", city: "Dubai", country: "AE", mcc: "4900", currency: "AED", min: 300, max: 4800, supplier: "dewa", account: "6600", expenseCategory: "Utilities", lineItems: ["Electricity and water"] },
  { name: "e& (Etisalat)", city: "Abu Dhabi", country: "AE", mcc: "4814", currency: "AED", min: 99, max: 1200, supplier: "etisalat", account: "6700", expenseCategory: "Telecommunications", lineItems: ["Business mobile plan"] },
  { name: "du", city: "Dubai", country: "AE", mcc: "4814", currency: "AED", min: 99, max: 900, supplier: "du", account: "6700", expenseCategory: "Telecommunications", lineItems: ["Business internet"] },
  { name: "Aramex", city: "Dubai", country: "AE", mcc: "4215", currency: "AED", min: 30, max: 1100, supplier: "aramex", account: "6800", expenseCategory: "Courier & Postage", lineItems: ["Express shipment"] },
];

export interface SupplierProfile {
  readonly key: string;
  readonly name: string;
}

export const SUPPLIERS: readonly SupplierProfile[] = [
  { key: "aws", name: "Amazon Web Services EMEA SARL" },
  { key: "google", name: "Google Ireland Limited" },
  { key: "microsoft", name: "Microsoft Ireland Operations Ltd" },
  { key: "atlassian", name: "Atlassian Pty Ltd" },
  { key: "github", name: "GitHub, Inc." },
  { key: "emirates", name: "Emirates" },
  { key: "flydubai", name: "flydubai" },
  { key: "booking", name: "Booking.com B.V." },
  { key: "marriott", name: "Marriott Marquis Riyadh" },
  { key: "careem", name: "Careem Networks FZ LLC" },
  { key: "uber", name: "Uber B.V." },
  { key: "salik", name: "Salik Company PJSC" },
  { key: "enoc", name: "Emirates National Oil Company" },
  { key: "adnoc", name: "ADNOC Distribution" },
  { key: "carrefour", name: "Majid Al Futtaim Hypermarkets LLC" },
  { key: "talabat", name: "Talabat General Trading LLC" },
  { key: "starbucks", name: "Alshaya Trading Co. (Starbucks)" },
  { key: "zuma", name: "Zuma Restaurant Dubai LLC" },
  { key: "jarir", name: "Jarir Marketing Company" },
  { key: "ikea", name: "Al-Futtaim IKEA" },
  { key: "sharafdg", name: "Sharaf DG LLC" },
  { key: "linkedin", name: "LinkedIn Ireland Unlimited Company" },
  { key: "meta", name: "Meta Platforms Ireland Ltd" },
  { key: "dewa", name: "Dubai Electricity and Water Authority" },
  { key: "etisalat", name: "Emirates Telecommunications Group (e&)" },
  { key: "du", name: "Emirates Integrated Telecommunications (du)" },
  { key: "aramex", name: "Aramex International LLC" },
];

export interface AccountProfile {
  readonly number: string;
  readonly name: string;
  readonly type: string;
  readonly description: string;
}

export const CHART_OF_ACCOUNTS: readonly AccountProfile[] = [
  { number: "1010", name: "Emirates NBD Current Account", type: "BANK", description: "Main operating bank account" },
  { number: "1150", name: "Qashio Card Clearing", type: "BANK", description: "Clearing account for card programme funding" },
  { number: "2100", name: "Accounts Payable", type: "CURRENT_LIABILITY", description: "Trade creditors" },
  { number: "2200", name: "VAT Payable", type: "CURRENT_LIABILITY", description: "Output VAT less recoverable input VAT" },
  { number: "6100", name: "Travel - Flights", type: "EXPENSE", description: "Air travel for business trips" },
  { number: "6110", name: "Travel - Accommodation", type: "EXPENSE", description: "Hotels and short stays" },
  { number: "6120", name: "Local Transport", type: "EXPENSE", description: "Taxis, ride hailing and tolls" },
  { number: "6130", name: "Fuel", type: "EXPENSE", description: "Vehicle fuel" },
  { number: "6200", name: "Software Subscriptions", type: "EXPENSE", description: "SaaS licences" },
  { number: "6210", name: "Cloud Hosting", type: "EXPENSE", description: "Infrastructure and hosting" },
  { number: "6300", name: "Meals & Entertainment", type: "EXPENSE", description: "Staff meals" },
  { number: "6310", name: "Client Entertainment", type: "EXPENSE", description: "Client meals and events" },
  { number: "6320", name: "Office Pantry", type: "EXPENSE", description: "Pantry and refreshments" },
  { number: "6400", name: "Office Supplies", type: "EXPENSE", description: "Stationery and consumables" },
  { number: "6410", name: "Office Furniture", type: "EXPENSE", description: "Furniture below capitalisation threshold" },
  { number: "6420", name: "IT Equipment", type: "EXPENSE", description: "Hardware below capitalisation threshold" },
  { number: "6500", name: "Advertising", type: "EXPENSE", description: "Paid media" },
  { number: "6600", name: "Utilities", type: "EXPENSE", description: "Electricity and water" },
  { number: "6700", name: "Telecommunications", type: "EXPENSE", description: "Mobile and internet" },
  { number: "6800", name: "Courier & Postage", type: "EXPENSE", description: "Shipping and couriers" },
  { number: "6900", name: "Bank & Card Fees", type: "EXPENSE", description: "FX and card fees" },
];

export interface TaxRateProfile {
  readonly code: string;
  readonly name: string;
  readonly rate: number;
  readonly country: string;
}

export const TAX_RATES: readonly TaxRateProfile[] = [
  { code: "SR", name: "Standard Rated 5%", rate: 5, country: "AE" },
  { code: "ZR", name: "Zero Rated", rate: 0, country: "AE" },
  { code: "EX", name: "Exempt", rate: 0, country: "AE" },
  { code: "RC", name: "Reverse Charge 5%", rate: 5, country: "AE" },
  { code: "OS", name: "Out of Scope", rate: 0, country: "AE" },
  { code: "SA15", name: "KSA Standard Rated 15%", rate: 15, country: "SA" },
];

export const BANK_ACCOUNTS: readonly { readonly name: string; readonly type: string; readonly reconciliation: boolean }[] = [
  { name: "Emirates NBD Current Account", type: "CURRENT", reconciliation: true },
  { name: "Mashreq NeoBiz Account", type: "CURRENT", reconciliation: true },
  { name: "Qashio Card Clearing", type: "CLEARING", reconciliation: false },
  { name: "ADCB USD Account", type: "FOREIGN_CURRENCY", reconciliation: true },
];

export interface SegmentProfile {
  readonly label: string;
  readonly values: readonly (readonly [code: string, name: string])[];
}

export const SEGMENTS: readonly SegmentProfile[] = [
  { label: "Location", values: [["DXB", "Dubai HQ"], ["AUH", "Abu Dhabi Office"], ["RUH", "Riyadh Branch"]] },
  { label: "Department", values: [["FIN", "Finance"], ["ENG", "Engineering"], ["SAL", "Sales"], ["MKT", "Marketing"], ["OPS", "Operations"]] },
  { label: "Project", values: [["PRJ-101", "Website Revamp"], ["PRJ-204", "Riyadh Expansion"], ["PRJ-330", "ERP Migration"]] },
  { label: "Division", values: [["COM", "Commercial"], ["COR", "Corporate"]] },
  { label: "cost_centre", values: [["CC-100", "Head Office"], ["CC-210", "Field Sales"], ["CC-310", "Product"]] },
];

/** Exchange rates into the billing currency (AED-pegged figures). */
export const AED_PER_UNIT: Readonly<Record<string, number>> = {
  AED: 1,
  USD: 3.6725,
  EUR: 3.98,
  GBP: 4.64,
  SAR: 0.9793,
};

export const FIRST_NAMES: readonly string[] = [
  "Aisha", "Omar", "Fatima", "Rahul", "Sara", "Khalid", "Priya", "Youssef", "Mariam", "Daniel",
  "Layla", "Hassan", "Noura", "Arjun", "Elena", "Tariq", "Hind", "James", "Reem", "Vikram",
];

export const LAST_NAMES: readonly string[] = [
  "Al Mansoori", "Haddad", "Khan", "Nair", "Farouk", "Al Suwaidi", "Menon", "Rahman", "Costa", "O'Brien",
  "Al Hashimi", "Kapoor", "Saleh", "Petrova", "Fernandes", "Al Qasimi",
];

export const DEPARTMENTS: readonly string[] = ["Finance", "Engineering", "Sales", "Marketing", "Operations"];

/** Converts an amount between currencies through the AED peg, to two decimals. */
export function convert(amount: number, from: string, to: string): number {
  const rateFrom = AED_PER_UNIT[from] ?? 1;
  const rateTo = AED_PER_UNIT[to] ?? 1;
  return Math.round(((amount * rateFrom) / rateTo) * 100) / 100;
}
