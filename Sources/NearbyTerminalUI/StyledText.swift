import NearbyChat

/// How a piece of text looks on a color terminal (SGR attributes).
public struct TextStyle: Hashable, Sendable {
  /// An SGR foreground color code (31–37, 90–97), or nil for the default color.
  public var foreground: UInt8?
  /// A color of the 256-color palette (`38;5;N`); it wins over `foreground`.
  public var palette: UInt8?
  public var bold: Bool
  public var dim: Bool
  /// Reverse video (the status bar).
  public var reverse: Bool

  public init(foreground: UInt8? = nil, palette: UInt8? = nil, bold: Bool = false, dim: Bool = false, reverse: Bool = false) {
    self.foreground = foreground
    self.palette = palette
    self.bold = bold
    self.dim = dim
    self.reverse = reverse
  }

  public static let plain = TextStyle()
  public static let dim = TextStyle(dim: true)
  public static let bold = TextStyle(bold: true)
  public static let error = TextStyle(foreground: 31, bold: true)
  public static let attention = TextStyle(foreground: 33, bold: true)
  public static let statusBar = TextStyle(reverse: true)

  /// The same style in reverse video.
  public var reversed: TextStyle {
    var style = self
    style.reverse = true
    return style
  }

  /// The SGR parameters (`1;32`), empty for plain text.
  public var parameters: String {
    var codes: [String] = []
    if bold { codes.append("1") }
    if dim { codes.append("2") }
    if reverse { codes.append("7") }
    if let palette {
      codes.append("38;5;\(palette)")
    } else if let foreground {
      codes.append(String(foreground))
    }
    return codes.joined(separator: ";")
  }
}

/// A run of text in one style.
public struct StyledSpan: Hashable, Sendable {
  public var text: String
  public var style: TextStyle

  public init(_ text: String, _ style: TextStyle = .plain) {
    self.text = text
    self.style = style
  }
}

/// One line of styled text: what the chat shows above the input line, or a row of it.
public struct StyledLine: Hashable, Sendable {
  public var spans: [StyledSpan]

  public init(_ spans: [StyledSpan] = []) { self.spans = spans }

  public init(_ text: String, _ style: TextStyle = .plain) { spans = [StyledSpan(text, style)] }

  public mutating func append(_ text: String, _ style: TextStyle = .plain) {
    guard !text.isEmpty else { return }
    if let last = spans.last, last.style == style {
      spans[spans.count - 1].text += text
    } else {
      spans.append(StyledSpan(text, style))
    }
  }

  /// The text without styles.
  public var plain: String { spans.map(\.text).joined() }

  /// The columns the line takes.
  public var width: Int { spans.reduce(0) { $0 + DisplayWidth.of($1.text) } }

  /// The text with SGR escapes (only around styled spans), or plain when `color` is false.
  public func ansi(color: Bool) -> String {
    guard color else { return plain }
    var out = ""
    for span in spans {
      let parameters = span.style.parameters
      if parameters.isEmpty {
        out += span.text
      } else {
        out += "\u{1B}[\(parameters)m\(span.text)\u{1B}[0m"
      }
    }
    return out
  }

  /// The line cut into rows of at most `width` columns, the way ``RowLayout`` places
  /// characters (a wide character that does not fit at the end of a row starts the next).
  /// An empty line is one empty row.
  public func rows(width: Int) -> [StyledLine] {
    var rows: [StyledLine] = [StyledLine()]
    var column = 0
    for span in spans {
      for character in span.text {
        let characterWidth = DisplayWidth.of(character)
        if RowLayout.wraps(column: column, characterWidth: characterWidth, width: width) {
          rows.append(StyledLine())
          column = 0
        }
        rows[rows.count - 1].append(String(character), span.style)
        column += characterWidth
      }
    }
    return rows
  }
}

/// Where characters go when text wraps at a width: the one rule that both the lines above
/// the input and the input line itself follow, so row counts always agree.
public enum RowLayout {
  /// Whether a character of `characterWidth` columns at `column` goes to the next row.
  public static func wraps(column: Int, characterWidth: Int, width: Int) -> Bool {
    column > 0 && column + characterWidth > width
  }

  /// The row and column of each character, and of the position after the last one (which
  /// is the start of the next row when the last row is full).
  public static func place(_ widths: [Int], width: Int) -> (positions: [(row: Int, column: Int)], end: (row: Int, column: Int)) {
    var positions: [(row: Int, column: Int)] = []
    positions.reserveCapacity(widths.count)
    var row = 0
    var column = 0
    for characterWidth in widths {
      if wraps(column: column, characterWidth: characterWidth, width: width) {
        row += 1
        column = 0
      }
      positions.append((row, column))
      column += characterWidth
    }
    return (positions, column >= width ? (row + 1, 0) : (row, column))
  }
}
