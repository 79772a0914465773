public import Foundation

/// A `multipart/form-data` body: encoded by adapters (uploads), decoded by the replay
/// matcher and by emulator dialects.
public struct MultipartForm: Sendable, Hashable {
    public struct Part: Sendable, Hashable {
        public var name: String
        public var filename: String?
        public var contentType: String?
        public var data: Data
        public init(name: String, filename: String? = nil, contentType: String? = nil, data: Data) {
            self.name = name
            self.filename = filename
            self.contentType = contentType
            self.data = data
        }
        public static func text(_ name: String, _ value: String) -> Part { Part(name: name, data: Data(value.utf8)) }
    }

    public var parts: [Part]
    public var boundary: String

    public init(parts: [Part] = [], boundary: String = "mbaas-" + UUID().uuidString) {
        self.parts = parts
        self.boundary = boundary
    }

    public var contentType: String { "multipart/form-data; boundary=\(boundary)" }

    /// The encoded body, parts in order, CRLF line breaks. Non-ASCII file names go in `filename*=UTF-8''...`
    /// as well as in a quoted `filename` (RFC 7578 §4.2).
    public func encoded() -> Data {
        var out = Data()
        func line(_ s: String) { out.append(Data((s + "\r\n").utf8)) }
        for part in parts {
            line("--\(boundary)")
            var disposition = "Content-Disposition: form-data; name=\"\(escape(part.name))\""
            if let filename = part.filename {
                disposition += "; filename=\"\(escape(filename))\""
                if filename.unicodeScalars.contains(where: { !$0.isASCII }) {
                    disposition += "; filename*=UTF-8''\(percentEncode(filename))"
                }
            }
            line(disposition)
            if let ct = part.contentType { line("Content-Type: \(ct)") }
            line("")
            out.append(part.data)
            line("")
        }
        line("--\(boundary)--")
        return out
    }

    private func escape(_ s: String) -> String {
        s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\r", with: "%0D").replacingOccurrences(of: "\n", with: "%0A")
    }

    /// The boundary of a `multipart/*` content type, if any.
    public static func boundary(fromContentType contentType: String) -> String? {
        for param in contentType.split(separator: ";").dropFirst() {
            let kv = param.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if kv.count == 2, kv[0].lowercased() == "boundary" {
                return kv[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            }
        }
        return nil
    }

    /// Decodes a body given its content type; malformed input is ``MBaaSError/Kind/invalidRequest``.
    public static func decode(_ body: Data, contentType: String) throws -> MultipartForm {
        guard let boundary = boundary(fromContentType: contentType) else {
            throw MBaaSError(.invalidRequest, "multipart content type without a boundary: \(contentType)")
        }
        let bytes = [UInt8](body)
        let delimiter = [UInt8](("--" + boundary).utf8)
        var positions: [Int] = []
        var i = 0
        while i + delimiter.count <= bytes.count {
            if bytes[i] == delimiter[0], Array(bytes[i..<i + delimiter.count]) == delimiter,
               i == 0 || (i >= 2 && bytes[i - 2] == 13 && bytes[i - 1] == 10) {
                positions.append(i)
                i += delimiter.count
            } else {
                i += 1
            }
        }
        guard positions.count >= 2 else { throw MBaaSError(.invalidRequest, "multipart body has no parts") }
        var parts: [Part] = []
        for (start, end) in zip(positions, positions.dropFirst()) {
            var p = start + delimiter.count
            guard p + 2 <= bytes.count, bytes[p] == 13, bytes[p + 1] == 10 else { continue }
            p += 2
            // headers end at CRLFCRLF
            var headerEnd = p
            while headerEnd + 3 < end, !(bytes[headerEnd] == 13 && bytes[headerEnd + 1] == 10
                                           && bytes[headerEnd + 2] == 13 && bytes[headerEnd + 3] == 10) {
                headerEnd += 1
            }
            guard headerEnd + 3 < end else { throw MBaaSError(.invalidRequest, "multipart part without headers end") }
            let headerText = String(decoding: bytes[p..<headerEnd], as: UTF8.self)
            let dataStart = headerEnd + 4
            let dataEnd = end - 2  // strip the CRLF before the next delimiter
            guard dataEnd >= dataStart else { throw MBaaSError(.invalidRequest, "multipart part is truncated") }
            var name: String?
            var filename: String?
            var filenameStar: String?
            var contentType: String?
            for line in headerText.components(separatedBy: "\r\n") {
                let lower = line.lowercased()
                if lower.hasPrefix("content-disposition:") {
                    name = param(line, "name")
                    filename = param(line, "filename")
                    filenameStar = param(line, "filename*").flatMap { v in
                        v.lowercased().hasPrefix("utf-8''") ? String(v.dropFirst(7)).removingPercentEncoding : nil
                    }
                } else if lower.hasPrefix("content-type:") {
                    contentType = line.dropFirst("content-type:".count).trimmingCharacters(in: .whitespaces)
                }
            }
            guard let name else { throw MBaaSError(.invalidRequest, "multipart part without a name") }
            parts.append(Part(name: name, filename: filenameStar ?? filename, contentType: contentType,
                              data: Data(bytes[dataStart..<dataEnd])))
        }
        return MultipartForm(parts: parts, boundary: boundary)
    }

    private static func param(_ header: String, _ key: String) -> String? {
        // Finds key="value" (quoted, with \" escapes) or key=value.
        let scalars = Array(header)
        var i = 0
        while i < scalars.count {
            if scalars[i] == ";" {
                var j = i + 1
                while j < scalars.count, scalars[j] == " " { j += 1 }
                let k = Array(key)
                if j + k.count < scalars.count, String(scalars[j..<j + k.count]).lowercased() == key.lowercased(),
                   scalars[j + k.count] == "=" {
                    var v = j + k.count + 1
                    if v < scalars.count, scalars[v] == "\"" {
                        v += 1
                        var out = ""
                        while v < scalars.count, scalars[v] != "\"" {
                            if scalars[v] == "\\", v + 1 < scalars.count { v += 1 }
                            out.append(scalars[v])
                            v += 1
                        }
                        return out
                    }
                    var out = ""
                    while v < scalars.count, scalars[v] != ";" { out.append(scalars[v]); v += 1 }
                    return out.trimmingCharacters(in: .whitespaces)
                }
            }
            i += 1
        }
        return nil
    }

    /// The first part with a name.
    public func part(named name: String) -> Part? { parts.first { $0.name == name } }
}
