import MBaaSCore

extension StoreValidation.Limits {
    /// PostgreSQL's `jsonb` and `text` hold no U+0000: strings and member names with one are refused as input.
    static let postgres = StoreValidation.Limits(allowsNULInStrings: false, nulReason: "PostgreSQL text holds none")
}
