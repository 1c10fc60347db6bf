//! Murmur3 (x86, 32 bits, seed 0) of every value of an array: the hash of DuckLake's
//! `bucket(N)` partition transform, as DuckDB's `murmur3_32` computes it (Iceberg's
//! bucket hash: an integer as its 8 little-endian bytes, a float as its `double`'s bits,
//! text and bytes as themselves). Which form a DuckLake type is hashed in is the Python
//! side's choice (`write/_buckets.py`); this module only hashes, at native speed, because
//! a partitioned write hashes every row.

use std::sync::Arc;

use arrow::array::{Array, ArrayData, ArrayRef, AsArray, Int32Array, OffsetSizeTrait};
use arrow::datatypes::{DataType, Float64Type, Int64Type};
use arrow_pyarrow::PyArrowType;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

/// Murmur3 x86 32-bit of `data` with seed 0 (the reference algorithm, as Iceberg's
/// specification gives it in its appendix on 32-bit hashes).
pub fn murmur3_32(data: &[u8]) -> i32 {
    const C1: u32 = 0xcc9e_2d51;
    const C2: u32 = 0x1b87_3593;
    let mut h1: u32 = 0;
    let mut blocks = data.chunks_exact(4);
    for block in &mut blocks {
        let k1 = u32::from_le_bytes([block[0], block[1], block[2], block[3]]);
        h1 ^= mix(k1, C1, C2);
        h1 = h1.rotate_left(13).wrapping_mul(5).wrapping_add(0xe654_6b64);
    }
    let tail = blocks.remainder();
    if !tail.is_empty() {
        let mut k1 = 0u32;
        for (shift, byte) in tail.iter().enumerate() {
            k1 ^= u32::from(*byte) << (8 * shift);
        }
        h1 ^= mix(k1, C1, C2);
    }
    // the length is taken modulo 2^32, as the reference does
    h1 ^= data.len() as u32;
    h1 ^= h1 >> 16;
    h1 = h1.wrapping_mul(0x85eb_ca6b);
    h1 ^= h1 >> 13;
    h1 = h1.wrapping_mul(0xc2b2_ae35);
    h1 ^= h1 >> 16;
    h1 as i32
}

fn mix(k1: u32, c1: u32, c2: u32) -> u32 {
    k1.wrapping_mul(c1).rotate_left(15).wrapping_mul(c2)
}

/// A `double` as DuckDB hashes it: its bits, with -0.0 as 0.0.
fn double_bits(value: f64) -> [u8; 8] {
    let value = if value == 0.0 { 0.0 } else { value };
    value.to_bits().to_le_bytes()
}

fn hashed<T>(values: impl Iterator<Item = Option<T>>, hash: impl Fn(T) -> i32) -> ArrayRef {
    Arc::new(values.map(|value| value.map(&hash)).collect::<Int32Array>())
}

fn hashed_bytes<O: OffsetSizeTrait>(array: &dyn Array, binary: bool) -> ArrayRef {
    if binary {
        hashed(array.as_binary::<O>().iter(), murmur3_32)
    } else {
        hashed(array.as_string::<O>().iter(), |s: &str| {
            murmur3_32(s.as_bytes())
        })
    }
}

/// The hash of every value of `array` (int64, float64, string or binary; nulls stay
/// null), as an int32 array.
pub fn hash_array(array: &dyn Array) -> Result<ArrayRef, String> {
    Ok(match array.data_type() {
        DataType::Int64 => hashed(array.as_primitive::<Int64Type>().iter(), |v| {
            murmur3_32(&v.to_le_bytes())
        }),
        DataType::Float64 => hashed(array.as_primitive::<Float64Type>().iter(), |v| {
            murmur3_32(&double_bits(v))
        }),
        DataType::Utf8 => hashed_bytes::<i32>(array, false),
        DataType::LargeUtf8 => hashed_bytes::<i64>(array, false),
        DataType::Binary => hashed_bytes::<i32>(array, true),
        DataType::LargeBinary => hashed_bytes::<i64>(array, true),
        other => {
            return Err(format!(
                "murmur3_32 hashes int64, float64, text and bytes, not {other}"
            ))
        }
    })
}

/// `murmur3_32(array)`: the hash of every value (see `hash_array`).
#[pyfunction(name = "murmur3_32")]
pub fn py_murmur3_32(array: PyArrowType<ArrayData>) -> PyResult<PyArrowType<ArrayData>> {
    let array = arrow::array::make_array(array.0);
    let hashes = hash_array(array.as_ref()).map_err(PyTypeError::new_err)?;
    Ok(PyArrowType(hashes.to_data()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_values_of_icebergs_specification() {
        // Iceberg's spec, appendix B: int/long 34 -> 2017239379, "iceberg" -> 1210000089
        assert_eq!(murmur3_32(&34i64.to_le_bytes()), 2017239379);
        assert_eq!(murmur3_32(b"iceberg"), 1210000089);
        assert_eq!(murmur3_32(&1i64.to_le_bytes()), 1392991556);
    }

    #[test]
    fn negative_zero_hashes_as_zero() {
        assert_eq!(
            murmur3_32(&double_bits(-0.0)),
            murmur3_32(&double_bits(0.0))
        );
    }

    #[test]
    fn nulls_stay_null() {
        let array = arrow::array::Int64Array::from(vec![Some(1), None]);
        let hashes = hash_array(&array).unwrap();
        let hashes = hashes.as_primitive::<arrow::datatypes::Int32Type>();
        assert_eq!(hashes.value(0), 1392991556);
        assert!(hashes.is_null(1));
    }
}
