//! Element types under the names each framework prints them.

use serde::Serialize;

/// An element type. Bit widths follow XLA's `primitive_util`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    Pred,
    S2,
    S4,
    S8,
    S16,
    S32,
    S64,
    U2,
    U4,
    U8,
    U16,
    U32,
    U64,
    F4E2M1FN,
    F8E4M3FN,
    F8E4M3,
    F8E4M3FNUZ,
    F8E4M3B11FNUZ,
    F8E5M2,
    F8E5M2FNUZ,
    F8E8M0FNU,
    F16,
    BF16,
    F32,
    F64,
    C64,
    C128,
    /// XLA's opaque / token types, zero-sized.
    Token,
}

impl DType {
    /// Size of one element in bits.
    pub fn bits(self) -> u32 {
        use DType::*;
        match self {
            Token => 0,
            S2 | U2 => 2,
            S4 | U4 | F4E2M1FN => 4,
            Pred | S8 | U8 | F8E4M3FN | F8E4M3 | F8E4M3FNUZ | F8E4M3B11FNUZ | F8E5M2 | F8E5M2FNUZ | F8E8M0FNU => 8,
            S16 | U16 | F16 | BF16 => 16,
            S32 | U32 | F32 => 32,
            S64 | U64 | F64 | C64 => 64,
            C128 => 128,
        }
    }

    /// The XLA spelling (`bf16`, `f32`, `pred`, …).
    pub fn xla_name(self) -> &'static str {
        use DType::*;
        match self {
            Pred => "pred",
            S2 => "s2",
            S4 => "s4",
            S8 => "s8",
            S16 => "s16",
            S32 => "s32",
            S64 => "s64",
            U2 => "u2",
            U4 => "u4",
            U8 => "u8",
            U16 => "u16",
            U32 => "u32",
            U64 => "u64",
            F4E2M1FN => "f4e2m1fn",
            F8E4M3FN => "f8e4m3fn",
            F8E4M3 => "f8e4m3",
            F8E4M3FNUZ => "f8e4m3fnuz",
            F8E4M3B11FNUZ => "f8e4m3b11fnuz",
            F8E5M2 => "f8e5m2",
            F8E5M2FNUZ => "f8e5m2fnuz",
            F8E8M0FNU => "f8e8m0fnu",
            F16 => "f16",
            BF16 => "bf16",
            F32 => "f32",
            F64 => "f64",
            C64 => "c64",
            C128 => "c128",
            Token => "token",
        }
    }

    /// Parse an XLA element-type token as it appears in HLO shapes (`bf16`, `f32`, `pred`).
    pub fn from_xla(s: &str) -> Option<DType> {
        use DType::*;
        Some(match s {
            "pred" => Pred,
            "s2" => S2,
            "s4" => S4,
            "s8" => S8,
            "s16" => S16,
            "s32" => S32,
            "s64" => S64,
            "u2" => U2,
            "u4" => U4,
            "u8" => U8,
            "u16" => U16,
            "u32" => U32,
            "u64" => U64,
            "f4e2m1fn" => F4E2M1FN,
            "f8e4m3fn" => F8E4M3FN,
            "f8e4m3" => F8E4M3,
            "f8e4m3fnuz" => F8E4M3FNUZ,
            "f8e4m3b11fnuz" => F8E4M3B11FNUZ,
            "f8e5m2" => F8E5M2,
            "f8e5m2fnuz" => F8E5M2FNUZ,
            "f8e8m0fnu" => F8E8M0FNU,
            "f16" => F16,
            "bf16" => BF16,
            "f32" => F32,
            "f64" => F64,
            "c64" => C64,
            "c128" => C128,
            "token" => Token,
            _ => return None,
        })
    }

    /// Parse a dtype name as written by users, NumPy, JAX, PyTorch, TensorFlow or Triton:
    /// `float32`, `float`, `half`, `bfloat16`, `torch.float16`, `tf.float32`, `fp16`, `int8`,
    /// `float8_e4m3fn`, and the XLA spellings. Case-insensitive.
    pub fn from_name(s: &str) -> Option<DType> {
        use DType::*;
        let lower = s.trim().to_ascii_lowercase();
        let n = lower
            .trim_start_matches("torch.")
            .trim_start_matches("tf.")
            .trim_start_matches("jnp.")
            .trim_start_matches("np.")
            .trim_start_matches("dt_");
        if let Some(d) = DType::from_xla(n) {
            return Some(d);
        }
        Some(match n {
            "bool" | "boolean" => Pred,
            "int8" | "i8" | "char" => S8,
            "int16" | "i16" | "short" => S16,
            "int32" | "i32" | "int" => S32,
            "int64" | "i64" | "long" => S64,
            "int4" | "i4" => S4,
            "uint8" | "byte" => U8,
            "uint16" => U16,
            "uint32" => U32,
            "uint64" => U64,
            "uint4" => U4,
            "float16" | "fp16" | "half" => F16,
            "bfloat16" | "bfloat" => BF16,
            "float32" | "fp32" | "float" | "single" | "tf32" => F32,
            "float64" | "fp64" | "double" => F64,
            "complex64" => C64,
            "complex128" => C128,
            "float8_e4m3fn" | "fp8e4nv" | "fp8_e4m3fn" | "e4m3" | "fp8" => F8E4M3FN,
            "float8_e4m3" => F8E4M3,
            "float8_e4m3fnuz" | "fp8e4b8" => F8E4M3FNUZ,
            "float8_e4m3b11fnuz" | "fp8e4b15" => F8E4M3B11FNUZ,
            "float8_e5m2" | "fp8e5" | "fp8_e5m2" | "e5m2" => F8E5M2,
            "float8_e5m2fnuz" | "fp8e5b16" => F8E5M2FNUZ,
            "float8_e8m0fnu" => F8E8M0FNU,
            "float4_e2m1fn" => F4E2M1FN,
            _ => return None,
        })
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.xla_name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn names() {
        assert_eq!(DType::from_name("float").unwrap(), DType::F32);
        assert_eq!(DType::from_name("torch.bfloat16").unwrap(), DType::BF16);
        assert_eq!(DType::from_name("DT_FLOAT").unwrap(), DType::F32);
        assert_eq!(DType::from_name("fp8e4nv").unwrap().bits(), 8);
        assert_eq!(DType::from_xla("s4").unwrap().bits(), 4);
        assert!(DType::from_name("quux").is_none());
    }
}
